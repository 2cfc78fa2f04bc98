"""Carrying out a plan of app.backends.shifts: local models loaded one group at a time, their panes run, the
models unloaded, and those loaded before loaded again at the end.

`InTurnRun(plan, controller, registry).run()` runs on an asyncio loop (the window's qasync loop, or a script's),
loading and unloading on worker threads and starting panes through the controller on the loop's thread, which
must be the runner's owning thread. It reports `Progress` (turn, panes done, ETA from the time each pane took so
far); `cancel()` stops the current turn's panes and runs no further turn. A model that fails to load marks its
panes with the reason and the next turn goes on (app.session.shifts plans and starts these runs for the
controller). Qt-free.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from psygnal import Signal, SignalGroup

from app.backends.registry import BackendRegistry
from app.backends.shifts import Plan, Turn
from app.session.controller import RunAll, SessionController
from app.session.state import PaneSpec

CANCEL_WAIT_S = 5.0  # after a cancel, how long a turn waits to hear its panes end before it unloads anyway
WAKE_S = 1.0  # a turn re-checks that its panes and models are idle at least this often (a pane removed mid-run)


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"


@dataclass(frozen=True)
class Progress:
    """Where a plan is: `turn` of `turns` (1-based; 0 before the first), its models, the stage ("loading",
    "running", "unloading", "restoring", "done", "cancelled"), panes done of the plan's turns, and the ETA."""

    turn: int
    turns: int
    models: tuple[str, ...]
    stage: str
    panes_done: int
    panes_total: int
    eta_s: float | None = None
    in_turn: bool = True
    failed: tuple[str, ...] = ()  # why a model did not load
    elapsed_s: float = 0.0

    @property
    def finished(self) -> bool:
        return self.stage in ("done", "cancelled")

    def describe(self) -> str:
        """E.g. "Running models in turn: 1 of 2 (SmolLM2), 3 of 8 panes, ETA 40 s"."""
        names = ", ".join(self.models)
        head = "Models in turn" if self.in_turn else "Models on standby"
        if self.stage == "done":
            failed = f"; {len(self.failed)} model(s) did not load" if self.failed else ""
            panes = f"{self.panes_total} pane{'' if self.panes_total == 1 else 's'}"
            return f"{head}: done, {panes} in {duration(self.elapsed_s)}{failed}"
        if self.stage == "cancelled":
            return f"{head}: stopped after {self.panes_done} of {self.panes_total} panes"
        if self.stage == "restoring":
            return f"Loading {names} again"
        head = f"Running models in turn: {self.turn} of {self.turns} ({names})" if self.in_turn \
            else f"Running on {names}"
        doing = {"loading": ", loading…", "unloading": ", unloading…"}.get(self.stage, "")
        eta = f", ETA {duration(self.eta_s)}" if self.eta_s is not None else ""
        return f"{head}{doing}, {self.panes_done} of {self.panes_total} panes{eta}"


class InTurnEvents(SignalGroup):
    started = Signal(object)
    """A plan starts (its Plan)."""
    progress = Signal(object)
    """The plan moved on, or a pane ended (a Progress)."""
    problems = Signal(object)
    """Panes that could not start, with why: a tuple of (PaneSpec, message), as RunAll.problems."""
    finished = Signal(object)
    """The plan is over (its last Progress, "done" or "cancelled"); the models it unloaded are back."""


class InTurnRun:
    def __init__(self, plan: Plan, controller: SessionController, registry: BackendRegistry,
                 use_draft: bool = True, clock: Callable[[], float] = time.monotonic):
        """`use_draft=False`: regenerate the panes' last replies (as SessionController.rerun) instead."""
        self.plan, self.controller, self.registry = plan, controller, registry
        self.use_draft = use_draft
        self.runner = controller.runner
        self.events = InTurnEvents()
        self.cancelled = False
        self.failed: list[str] = []
        self._clock = clock
        self._started = clock()
        self._done: set[str] = set()  # ids of the turns' panes that ended (or never started)
        self._turn_panes = {p.id for turn in plan.turns for p in turn.panes}
        self._current: tuple[PaneSpec, ...] = ()
        self._wake: asyncio.Event | None = None
        self._begun: RunAll | None = None
        self.progress = self._progress(0, (), "loading")

    # --- control ------------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the current turn's panes and run no further turn (the models unloaded are still restored)."""
        self.cancelled = True
        for pane in self._current:
            self.controller.stop(pane)
        self._poke()

    def begin(self) -> RunAll:
        """Start what needs no model loaded (the panes on servers and loaded models; the refused panes get
        their error) at once, on the caller's thread; `run` does it first if nobody did. Returns what started
        and what could not."""
        if self._begun is None:
            for pane, why in self.plan.refused:
                self.runner.fail(pane, why)
            self._begun = self._start(self.plan.now)
        return self._begun

    async def run(self) -> Progress:
        """Carry the plan out; returns the last Progress. Never raises for a model that fails to load."""
        self._wake = asyncio.Event()
        self.runner.events.ended.connect(self._on_ended)
        try:
            self.begin()
            for index, turn in enumerate(self.plan.turns, 1):
                if self.cancelled:
                    break
                await self._run_turn(index, turn)
            for name in self.plan.restore:
                if self.registry.on_standby(name):
                    self._report(len(self.plan.turns), (self._label(name),), "restoring")
                    await self._load(name, again=True)
        finally:
            self.runner.events.ended.disconnect(self._on_ended)
            self._current = ()
            last = self._progress(len(self.plan.turns), (), "cancelled" if self.cancelled else "done")
            self.progress = last
            self.events.finished.emit(last)
        return last

    # --- one turn -----------------------------------------------------------------------------------------
    async def _run_turn(self, index: int, turn: Turn) -> None:
        labels = tuple(self._label(name) for name in turn.models)
        self._report(index, labels, "loading")
        for name in turn.load:
            if self.cancelled or self.registry.closed:
                break
            if not await self._load(name):
                for pane in turn.panes:
                    if pane.backend == name:
                        self.runner.fail(pane, self.failed[-1])
        ready = [name for name in turn.models if self.registry.get(name) is not None]
        if not self.cancelled:
            self._current = tuple(p for p in turn.panes if p.backend in ready)
            self._start(self._current)
            self._report(index, labels, "running")
        await self._until_idle(self._current, ready)
        self._current = ()
        self._done |= {p.id for p in turn.panes}
        self._report(index, labels, "unloading")
        for name in ready:
            await asyncio.to_thread(self.registry.unload, name)

    async def _load(self, name: str, again: bool = False) -> bool:
        try:
            await asyncio.to_thread(self.registry.load, name)
            return True
        except Exception as exc:  # the engine's own message (a broken file, out of memory): on the panes
            self.failed.append(f"Could not load {self._label(name)}{' again' if again else ''}: {exc}")
            return False

    def _start(self, panes: Sequence[PaneSpec]) -> RunAll:
        present = {p.id for p in self.controller.session.panes}
        panes = [p for p in panes if p.id in present]  # a pane removed while it waited for its model
        if not panes:
            return RunAll(0, 0)
        report = self.controller.run_many(list(panes), use_draft=self.use_draft)
        started = {p.id for p in panes if self.runner.busy(p)}
        self._done |= {p.id for p in panes if p.id not in started and p.id in self._turn_panes}
        if report.problems:
            self.events.problems.emit(report.problems)
        return report

    async def _until_idle(self, panes: Sequence[PaneSpec], models: Sequence[str]) -> None:
        """Until the turn's panes have ended and its models run nothing else either (then unloading cancels
        nothing), or the plan is cancelled."""
        def busy() -> bool:
            if any(self.runner.busy(p) for p in panes):
                return True
            for name in models:
                stats = None if self.cancelled else (backend := self.registry.get(name)) and backend.stats()
                if stats and (stats.active or stats.queued):
                    return True
            return False

        cancelled_at = None
        while not self.registry.closed and busy():
            if self.cancelled:  # the panes were told to stop: their ends are heard in a moment, else unloading
                cancelled_at = cancelled_at or self._clock()  # ends them
                if self._clock() - cancelled_at > CANCEL_WAIT_S:
                    return
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), WAKE_S)
            except TimeoutError:
                pass

    # --- progress -----------------------------------------------------------------------------------------
    def _on_ended(self, pane, _result) -> None:
        if pane is not None and pane.id in self._turn_panes and pane.id not in self._done:
            self._done.add(pane.id)
            self._report(self.progress.turn, self.progress.models, self.progress.stage)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _label(self, name: str) -> str:
        return self.plan.labels.get(name, name)

    def _progress(self, turn: int, models: tuple[str, ...], stage: str) -> Progress:
        done, total = len(self._done), len(self._turn_panes)
        eta = None
        if 0 < done < total:  # the time each pane took so far, loads included, times the panes left
            eta = (self._clock() - self._started) / done * (total - done)
        return Progress(turn, len(self.plan.turns), models, stage, done, total, eta, self.plan.in_turn,
                        tuple(self.failed), self._clock() - self._started)

    def _report(self, turn: int, models: tuple[str, ...], stage: str) -> None:
        self.progress = self._progress(turn, models, stage)
        self.events.progress.emit(self.progress)


__all__ = ["InTurnEvents", "InTurnRun", "Progress", "duration"]
