"""Local models that do not fit in memory together, run in shifts: a shift loads a group of models that fit
together, runs their share of the work (panes, an evaluation's cells and judge calls), then unloads them. This
module plans the shifts (`plan`, `plan_for`) and carries a plan out (`ShiftRun`) for whatever work it is given
(`ShiftWork`: app.session.shifts for panes, app.evaluate.shifts for an evaluation); the arena loads a pair's
models with the same `load` and `unload`.

`plan_for(panes, registry)` measures what the panes' local models need (app.models' estimate at each model's
engine settings) against the free RAM (`available_ram()`, which `$CHORUS_MEMORY_LIMIT` caps) plus what the
loaded ones among them would give back, and `plan` decides, without loading anything:
- nothing to load (every model the panes use is loaded, or they run on servers): the panes just run;
- the models on standby fit beside the loaded ones: one shift loads them, runs their panes, unloads them;
- they do not fit together: shifts. The first runs the models already loaded (plus any standby model that fits
  beside them), each later one loads a group of models that fit together; each shift unloads its models when
  its panes end, and the models that were loaded before are loaded again at the end (`restore`);
- a model that cannot fit even alone is not loaded: its panes end with an error that says the numbers.
Panes on servers, or on loaded models the plan does not use, run at once as usual.

`ShiftRun(plan, registry, work).run()` runs on an asyncio loop whose thread owns the work (the window's qasync
loop, or a script's), loading and unloading on worker threads. For each shift it loads the models (a model that
fails to load is handed to `work.load_failed` with the engine's message, and the next shift goes on), starts the
work on the models that loaded, waits until the work is idle (woken by `poke`, and at least every `WAKE_S`), and
unloads them; then it loads again the models that were loaded before. Once the work is cancelled no further
shift starts, and a shift waits at most `CANCEL_WAIT_S` to hear its work end before it unloads anyway. Qt-free.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from app.backends.registry import BackendRegistry
from app.models import estimate_memory, model_name
from app.models.fit import MEMORY_LIMIT_ENV, available_ram, memory_limit, size_label

Job = Any  # anything with a `backend` name: a pane (app.session.PaneSpec), a backend an evaluation uses
CANCEL_WAIT_S = 5.0  # after a cancel, how long a shift waits to hear its work end before it unloads anyway
WAKE_S = 1.0  # a shift re-checks that its work is idle at least this often (a pane removed mid-run)


@dataclass(frozen=True)
class BackendJob:
    """A job that is only a backend name: what an evaluation or an arena pair plans, one per backend it uses."""

    backend: str


@dataclass(frozen=True)
class ModelUse:
    """A local model some panes run on."""

    name: str  # the backend name the panes store
    label: str  # what to call it: the model file's stem
    need: int  # bytes at its engine settings (0: unknown; loading it then says what is wrong)
    loaded: bool


@dataclass(frozen=True)
class Shift:
    """One model group's share of a plan: its models loaded, its jobs run, its models unloaded."""

    models: tuple[str, ...]  # the local models this shift runs on; each is unloaded when the shift ends
    panes: tuple[Job, ...]
    load: tuple[str, ...]  # those among them not loaded yet


@dataclass(frozen=True)
class Plan:
    now: tuple[Job, ...] = ()  # panes that run at once, as usual
    shifts: tuple[Shift, ...] = ()
    refused: tuple[tuple[Job, str], ...] = ()  # panes whose model cannot fit even alone, with the reason
    restore: tuple[str, ...] = ()  # models loaded before that the plan unloads: loaded again at the end
    labels: Mapping[str, str] = field(default_factory=dict)
    free: int = 0

    @property
    def needed(self) -> bool:
        """Whether running the panes takes more than starting them: a model to load, or a pane refused."""
        return bool(self.shifts or self.refused)

    @property
    def in_shifts(self) -> bool:
        """Whether the models run in shifts because they do not fit in memory together."""
        return len(self.shifts) > 1

    def describe(self) -> str:
        """One sentence for a status bar."""
        order = " → ".join("+".join(self.labels.get(n, n) for n in shift.models) for shift in self.shifts)
        if self.in_shifts:
            return f"These models do not fit in {size_label(self.free)} together: running them in shifts, {order}."
        if self.shifts:
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
        shifts = (Shift(tuple(fitting), panes_of(fitting), tuple(fitting)),) if fitting else ()
        return Plan(now=others_and(loaded), shifts=shifts, refused=refused, labels=labels, free=free)
    groups, room = [list(loaded)], [free - sum(models[name].need for name in loaded)]
    for name in fitting:  # first fit, in the panes' order: as few shifts as the sizes allow
        need = models[name].need
        slot = next((i for i, left in enumerate(room) if need <= left), None)
        if slot is None:
            groups.append([])
            room.append(free)
            slot = len(groups) - 1
        groups[slot].append(name)
        room[slot] -= need
    shifts = tuple(Shift(tuple(g), panes_of(g), tuple(n for n in g if not models[n].loaded)) for g in groups if g)
    return Plan(now=others_and(()), shifts=shifts, refused=refused, restore=tuple(loaded), labels=labels, free=free)


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
    plan errs towards more shifts). Nothing is measured when no pane's model is on standby."""
    panes = [p for p in panes if runnable(p)]
    if not any(registry.on_standby(p.backend) for p in panes):
        return Plan(now=tuple(panes))
    models = {}
    for name in dict.fromkeys(p.backend for p in panes):
        if (config := registry.config(name)) is not None:
            models[name] = ModelUse(name, model_name(config.model_path), _need(config, estimator),
                                    not registry.on_standby(name))
    used = sum(m.need for m in models.values() if m.loaded)
    resident = sum(_need(registry.config(name), estimator) for name in registry.loaded_local() if name not in models)
    free = available_ram(in_use=resident + used) if free_ram is None else free_ram
    return plan(panes, models, free + used, memory_limit())


def room_for(registry: BackendRegistry, config, estimator: Callable = estimate_memory) -> str | None:
    """None when a local model at `config` fits in memory beside the local models loaded now; else why not,
    with the numbers (the caller then keeps it on standby, to run in shifts)."""
    need = _need(config, estimator)
    in_use = sum(_need(registry.config(name), estimator) for name in registry.loaded_local())
    free = available_ram(in_use=in_use)
    if need <= free:
        return None
    return f"it needs about {size_label(need)} and {size_label(free)} is free beside the models loaded"


# --- carrying a plan out ---------------------------------------------------------------------------------------
class ShiftWork(Protocol):
    """What a plan's shifts run (panes, an evaluation's cells and judge calls), as ShiftRun asks it."""

    @property
    def cancelled(self) -> bool:
        """Stopped: no further shift starts."""

    def start(self, shift: Shift, ready: Sequence[str]) -> None:
        """Run the shift's work on `ready`, the shift's models that are loaded."""

    def busy(self, ready: Sequence[str]) -> bool:
        """Whether the shift's work still runs (then its models are not unloaded yet)."""

    def load_failed(self, name: str, why: str, shift: Shift | None) -> None:
        """`name` did not load (`why` says so); `shift` is None when it was being loaded again at the end."""

    def stage(self, stage: str, index: int, models: tuple[str, ...]) -> None:
        """The plan moved on: "loading", "running" or "unloading" shift `index` (1-based) and its `models`, or
        "restoring" one of the models the plan unloaded (`index` is then the last shift's)."""


async def load(registry: BackendRegistry, name: str, label: str, again: bool = False) -> str | None:
    """Load a model on standby on a worker thread: None when it loaded, else why not (the engine's own message:
    a broken file, out of memory)."""
    try:
        await asyncio.to_thread(registry.load, name)
        return None
    except Exception as exc:
        return f"Could not load {label}{' again' if again else ''}: {exc}"


async def unload(registry: BackendRegistry, name: str) -> None:
    await asyncio.to_thread(registry.unload, name)


class ShiftRun:
    def __init__(self, plan: Plan, registry: BackendRegistry, work: ShiftWork,
                 clock: Callable[[], float] = time.monotonic):
        self.plan, self.registry, self.work = plan, registry, work
        self.failed: list[str] = []  # why models did not load, in order
        self._clock = clock
        self._wake: asyncio.Event | None = None

    def label(self, name: str) -> str:
        return self.plan.labels.get(name, name)

    def poke(self) -> None:
        """Something ended: a waiting shift checks now whether its work is idle."""
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Every shift, one after another, then the models the plan unloaded loaded again. Never raises for a model that
        fails to load."""
        self._wake = self._wake or asyncio.Event()
        for index, shift in enumerate(self.plan.shifts, 1):
            if self.work.cancelled:
                break
            await self._run_shift(index, shift)
        for name in self.plan.restore:
            if self.registry.on_standby(name) and not self.registry.closed:
                self.work.stage("restoring", len(self.plan.shifts), (name,))
                await self._load(name, None)

    async def _run_shift(self, index: int, shift: Shift) -> None:
        self.work.stage("loading", index, shift.models)
        for name in shift.load:
            if self.work.cancelled or self.registry.closed:
                break
            await self._load(name, shift)
        ready = tuple(name for name in shift.models if self.registry.get(name) is not None)
        if not self.work.cancelled:
            self.work.start(shift, ready)
            self.work.stage("running", index, shift.models)
        await self.wait(lambda: self.work.busy(ready))
        self.work.stage("unloading", index, shift.models)
        for name in ready:
            await unload(self.registry, name)

    async def _load(self, name: str, shift: Shift | None) -> None:
        why = await load(self.registry, name, self.label(name), again=shift is None)
        if why is not None:
            self.failed.append(why)
            self.work.load_failed(name, why, shift)

    async def wait(self, busy: Callable[[], bool]) -> None:
        """Until `busy()` is false (checked when poked, and every WAKE_S), the registry closes, or the work has
        been cancelled for CANCEL_WAIT_S (its ends are heard in a moment, else unloading ends them)."""
        self._wake = self._wake or asyncio.Event()
        cancelled_at = None
        while not self.registry.closed and busy():
            if self.work.cancelled:
                cancelled_at = cancelled_at or self._clock()
                if self._clock() - cancelled_at > CANCEL_WAIT_S:
                    return
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), WAKE_S)
            except TimeoutError:
                pass


__all__ = ["BackendJob", "ModelUse", "Plan", "Shift", "ShiftRun", "ShiftWork", "load", "plan", "plan_for",
           "room_for", "too_big", "unload"]
