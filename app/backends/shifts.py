"""Local models that do not fit in memory together, run one after another: load, run its panes, unload, next.
This module plans; app.session.in_turn carries a plan out.

`plan_for(panes, registry)` measures what the panes' local models need (app.models' estimate at each model's
engine settings) against the free RAM (`available_ram()`, which `$CHORUS_MEMORY_LIMIT` caps) plus what the
loaded ones among them would give back, and `plan` decides, without loading anything:
- nothing to load (every model the panes use is loaded, or they run on servers): the panes just run;
- the models on standby fit beside the loaded ones: one turn loads them, runs their panes, unloads them;
- they do not fit together: turns. The first runs the models already loaded (plus any standby model that fits
  beside them), each later one loads a group of models that fit together; each turn unloads its models when
  its panes end, and the models that were loaded before are loaded again at the end (`restore`);
- a model that cannot fit even alone is not loaded: its panes end with an error that says the numbers.
Panes on servers, or on loaded models the plan does not use, run at once as usual. Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.backends.registry import BackendRegistry
from app.models import estimate_memory
from app.models.fit import MEMORY_LIMIT_ENV, available_ram, memory_limit, size_label

Job = Any  # anything with a `backend` name: a pane (app.session.PaneSpec), an evaluation route


@dataclass(frozen=True)
class ModelUse:
    """A local model some panes run on."""

    name: str  # the backend name the panes store
    label: str  # what to call it: the model file's stem
    need: int  # bytes at its engine settings (0: unknown; loading it then says what is wrong)
    loaded: bool


@dataclass(frozen=True)
class Turn:
    models: tuple[str, ...]  # the local models this turn runs on; each is unloaded when the turn ends
    panes: tuple[Job, ...]
    load: tuple[str, ...]  # those among them not loaded yet


@dataclass(frozen=True)
class Plan:
    now: tuple[Job, ...] = ()  # panes that run at once, as usual
    turns: tuple[Turn, ...] = ()
    refused: tuple[tuple[Job, str], ...] = ()  # panes whose model cannot fit even alone, with the reason
    restore: tuple[str, ...] = ()  # models loaded before that the plan unloads: loaded again at the end
    labels: Mapping[str, str] = field(default_factory=dict)
    free: int = 0

    @property
    def needed(self) -> bool:
        """Whether running the panes takes more than starting them: a model to load, or a pane refused."""
        return bool(self.turns or self.refused)

    @property
    def in_turn(self) -> bool:
        """Whether the models take turns because they do not fit in memory together."""
        return len(self.turns) > 1

    def describe(self) -> str:
        """One sentence for a status bar."""
        order = " → ".join("+".join(self.labels.get(n, n) for n in turn.models) for turn in self.turns)
        if self.in_turn:
            return f"These models do not fit in {size_label(self.free)} together: running them in turn, {order}."
        if self.turns:
            return f"Loading {order} for its panes (unloaded when they end)."
        return "Everything fits." if not self.refused else f"{len(self.refused)} pane(s) cannot run: too big."


def too_big(model: ModelUse, free: int, limit: int | None = None) -> str:
    capped = f" ({MEMORY_LIMIT_ENV} caps it at {size_label(limit)})" if limit is not None else ""
    return (f"{model.label} needs about {size_label(model.need)} of memory at these settings, but only "
            f"{size_label(free)} can be made free{capped}, so it was not loaded. Fewer slots, a smaller context "
            "per slot or a quantized KV cache (Settings) need less.")


def plan(panes: Sequence[Job], models: Mapping[str, ModelUse], free: int,
         limit: int | None = None) -> Plan:
    """Decide how `panes` run, given the local models among their backends and `free`: the bytes the plan's
    models may use at once (free RAM plus what the loaded ones among them take). `limit` only words the
    refusal. Panes on other backends (servers, names not in `models`) run at once."""
    labels = {name: m.label for name, m in models.items()}
    used = [name for name in dict.fromkeys(p.backend for p in panes) if name in models]
    loaded = [name for name in used if models[name].loaded]
    standby = [name for name in used if not models[name].loaded]
    if not standby:
        return Plan(now=tuple(panes), labels=labels, free=free)
    big = {name for name in standby if models[name].need > free}
    refused = tuple((p, too_big(models[p.backend], free, limit)) for p in panes if p.backend in big)
    fitting = [name for name in standby if name not in big]

    def panes_of(names) -> tuple[Job, ...]:
        return tuple(p for p in panes if p.backend in names)

    def others_and(names) -> tuple[Job, ...]:  # in the panes' order
        return tuple(p for p in panes if p.backend not in models or p.backend in names)

    if sum(models[name].need for name in loaded + fitting) <= free:  # all at once (or nothing can load)
        turns = (Turn(tuple(fitting), panes_of(fitting), tuple(fitting)),) if fitting else ()
        return Plan(now=others_and(loaded), turns=turns, refused=refused, labels=labels, free=free)
    groups, room = [list(loaded)], [free - sum(models[name].need for name in loaded)]
    for name in fitting:  # first fit, in the panes' order: as few turns as the sizes allow
        need = models[name].need
        slot = next((i for i, left in enumerate(room) if need <= left), None)
        if slot is None:
            groups.append([])
            room.append(free)
            slot = len(groups) - 1
        groups[slot].append(name)
        room[slot] -= need
    turns = tuple(Turn(tuple(g), panes_of(g), tuple(n for n in g if not models[n].loaded)) for g in groups if g)
    return Plan(now=others_and(()), turns=turns, refused=refused, restore=tuple(loaded), labels=labels, free=free)


def _need(config, estimator: Callable) -> int:
    if config is None:  # unloaded and forgotten meanwhile
        return 0
    try:
        return estimator(config.model_path, config.n_slots, config.n_ctx_per_slot, config.kv_type).total
    except (ValueError, OSError):
        return 0  # a broken file: loading it says what is wrong


def plan_for(panes: Sequence[Job], registry: BackendRegistry,
             runnable: Callable[[Job], bool] = lambda job: True, free_ram: int | None = None,
             estimator: Callable = estimate_memory) -> Plan:
    """`plan` for the panes that can run (`runnable`), their local models measured from the registry, each at
    the engine settings it runs, or will run, with. The room is `available_ram()` (less, under a memory limit,
    what the loaded models the plan leaves alone take) plus what the loaded ones it uses take; `free_ram`
    replaces `available_ram()`. The whole estimate counts against RAM, also for layers a GPU would hold (a
    plan errs towards more turns). Nothing is measured when no pane's model is on standby."""
    panes = [p for p in panes if runnable(p)]
    if not any(registry.on_standby(p.backend) for p in panes):
        return Plan(now=tuple(panes))
    models = {}
    for name in dict.fromkeys(p.backend for p in panes):
        if (config := registry.config(name)) is not None:
            models[name] = ModelUse(name, Path(config.model_path).stem, _need(config, estimator),
                                    not registry.on_standby(name))
    used = sum(m.need for m in models.values() if m.loaded)
    resident = sum(_need(registry.config(name), estimator) for name in registry.loaded_local() if name not in models)
    free = available_ram(in_use=resident + used) if free_ram is None else free_ram
    return plan(panes, models, free + used, memory_limit())


def room_for(registry: BackendRegistry, config, estimator: Callable = estimate_memory) -> str | None:
    """None when a local model at `config` fits in memory beside the local models loaded now; else why not,
    with the numbers (the caller then keeps it on standby, to run in turn)."""
    need = _need(config, estimator)
    in_use = sum(_need(registry.config(name), estimator) for name in registry.loaded_local())
    free = available_ram(in_use=in_use)
    if need <= free:
        return None
    return f"it needs about {size_label(need)} and {size_label(free)} is free beside the models loaded"


__all__ = ["ModelUse", "Plan", "Turn", "plan", "plan_for", "room_for", "too_big"]
