"""Panes whose local models are on standby, run in shifts: the panes' side of app.backends.shifts.

`PaneShifts(plan, controller, registry).run()` carries a plan out with app.backends.shifts.ShiftRun on an asyncio
loop whose thread owns the runner (the window's qasync loop, or a script's): each shift's panes start through the
controller once their models are loaded. It reports `Progress` (shift, panes done, ETA from the time each pane
took so far); `cancel()` stops the current shift's panes and runs no further shift. A model that fails to load
marks its panes with the reason and the next shift goes on.

`ModelShifts` is the SessionController's `loader`: the controller hands it the panes whose local model is on
standby, and it plans them and runs the plan as a task on the running asyncio loop. One plan at a time: while one
runs, other standby panes are refused with `ModelShifts.BUSY`. `controller_for` builds a controller with its
ModelShifts, so a front end gets models in shifts with its controller, whatever views it shows. Qt-free.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from psygnal import Signal, SignalGroup

from app.backends.registry import BackendRegistry
from app.backends.shifts import Plan, Shift, ShiftRun, plan_for
from app.session import conversation
from app.session.controller import RunAll, SessionController
from app.session.runner import SessionRunner
from app.session.state import PaneSpec, SessionModel


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"


@dataclass(frozen=True)
class Progress:
    """Where a plan is: `shift` of `shifts` (1-based; 0 before the first), its models, the stage ("loading",
    "running", "unloading", "restoring", "done", "cancelled"), panes done of the plan's shifts, and the ETA."""

    shift: int
    shifts: int
    models: tuple[str, ...]
    stage: str
    panes_done: int
    panes_total: int
    eta_s: float | None = None
    in_shifts: bool = True
    failed: tuple[str, ...] = ()  # why a model did not load
    elapsed_s: float = 0.0

    @property
    def finished(self) -> bool:
        return self.stage in ("done", "cancelled")

    def describe(self) -> str:
        """E.g. "Running models in shifts: 1 of 2 (SmolLM2), 3 of 8 panes, ETA 40 s"."""
        names = ", ".join(self.models)
        head = "Models in shifts" if self.in_shifts else "Models on standby"
        if self.stage == "done":
            failed = f"; {len(self.failed)} model(s) did not load" if self.failed else ""
            panes = f"{self.panes_total} pane{'' if self.panes_total == 1 else 's'}"
            return f"{head}: done, {panes} in {duration(self.elapsed_s)}{failed}"
        if self.stage == "cancelled":
            return f"{head}: stopped after {self.panes_done} of {self.panes_total} panes"
        if self.stage == "restoring":
            return f"Loading {names} again"
        head = f"Running models in shifts: {self.shift} of {self.shifts} ({names})" if self.in_shifts \
            else f"Running on {names}"
        doing = {"loading": ", loading…", "unloading": ", unloading…"}.get(self.stage, "")
        eta = f", ETA {duration(self.eta_s)}" if self.eta_s is not None else ""
        return f"{head}{doing}, {self.panes_done} of {self.panes_total} panes{eta}"


class ShiftEvents(SignalGroup):
    started = Signal(object)
    """A plan starts (its Plan)."""
    progress = Signal(object)
    """The plan moved on, or a pane ended (a Progress)."""
    problems = Signal(object)
    """Panes that could not start, with why: a tuple of (PaneSpec, message), as RunAll.problems."""
    finished = Signal(object)
    """The plan is over (its last Progress, "done" or "cancelled"); the models it unloaded are back."""


class PaneShifts:
    """A plan's panes, as the ShiftWork that app.backends.shifts.ShiftRun runs."""

    def __init__(self, plan: Plan, controller: SessionController, registry: BackendRegistry,
                 use_draft: bool = True, clock: Callable[[], float] = time.monotonic):
        """`use_draft=False`: regenerate the panes' last replies (as SessionController.rerun) instead."""
        self.plan, self.controller, self.registry = plan, controller, registry
        self.use_draft = use_draft
        self.runner = controller.runner
        self.events = ShiftEvents()
        self.cancelled = False
        self.shifts = ShiftRun(plan, registry, self, clock)
        self.failed = self.shifts.failed
        self._clock = clock
        self._started = clock()
        self._done: set[str] = set()  # ids of the shifts' panes that ended (or never started)
        self._shift_panes = {p.id for shift in plan.shifts for p in shift.panes}
        self._current: tuple[PaneSpec, ...] = ()
        self._begun: RunAll | None = None
        self.progress = self._progress(0, (), "loading")

    # --- control ------------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the current shift's panes and run no further shift (the models unloaded are still restored)."""
        self.cancelled = True
        for pane in self._current:
            self.controller.stop(pane)
        self.shifts.poke()

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
        self.runner.events.ended.connect(self._on_ended)
        try:
            self.begin()
            await self.shifts.run()
        finally:
            self.runner.events.ended.disconnect(self._on_ended)
            self._current = ()
            last = self._progress(len(self.plan.shifts), (), "cancelled" if self.cancelled else "done")
            self.progress = last
            self.events.finished.emit(last)
        return last

    # --- the ShiftWork that ShiftRun runs -----------------------------------------------------------------
    def start(self, shift: Shift, ready: Sequence[str]) -> None:
        self._current = tuple(p for p in shift.panes if p.backend in ready)
        self._start(self._current)

    def busy(self, ready: Sequence[str]) -> bool:
        """The shift's panes have not all ended, or its models run something else (then unloading would
        cancel it)."""
        if any(self.runner.busy(p) for p in self._current):
            return True
        for name in ready:
            stats = None if self.cancelled else (backend := self.registry.get(name)) and backend.stats()
            if stats and (stats.active or stats.queued):
                return True
        return False

    def load_failed(self, name: str, why: str, shift: Shift | None) -> None:
        for pane in shift.panes if shift is not None else ():
            if pane.backend == name:
                self.runner.fail(pane, why)

    def stage(self, stage: str, index: int, models: tuple[str, ...]) -> None:
        if stage == "unloading":  # the shift's panes are over
            shift = self.plan.shifts[index - 1]
            self._current = ()
            self._done |= {p.id for p in shift.panes}
        self._report(index, tuple(self.shifts.label(name) for name in models), stage)

    # --- panes --------------------------------------------------------------------------------------------
    def _start(self, panes: Sequence[PaneSpec]) -> RunAll:
        present = {p.id for p in self.controller.session.panes}
        panes = [p for p in panes if p.id in present]  # a pane removed while it waited for its model
        if not panes:
            return RunAll(0, 0)
        report = self.controller.run_many(list(panes), use_draft=self.use_draft)
        started = {p.id for p in panes if self.runner.busy(p)}
        self._done |= {p.id for p in panes if p.id not in started and p.id in self._shift_panes}
        if report.problems:
            self.events.problems.emit(report.problems)
        return report

    def _on_ended(self, pane, _result) -> None:
        if pane is not None and pane.id in self._shift_panes and pane.id not in self._done:
            self._done.add(pane.id)
            self._report(self.progress.shift, self.progress.models, self.progress.stage)
        self.shifts.poke()

    # --- progress -----------------------------------------------------------------------------------------
    def _progress(self, shift: int, models: tuple[str, ...], stage: str) -> Progress:
        done, total = len(self._done), len(self._shift_panes)
        eta = None
        if 0 < done < total:  # the time each pane took so far, loads included, times the panes left
            eta = (self._clock() - self._started) / done * (total - done)
        return Progress(shift, len(self.plan.shifts), models, stage, done, total, eta, self.plan.in_shifts,
                        tuple(self.failed), self._clock() - self._started)

    def _report(self, shift: int, models: tuple[str, ...], stage: str) -> None:
        self.progress = self._progress(shift, models, stage)
        self.events.progress.emit(self.progress)


class ModelShifts:
    """Where a front end's runs go when a pane's model is on standby: SessionController hands such panes here
    (`takes`, `start`, as its `loader`: see `controller_for`), and the plan runs as a task on the running asyncio
    loop. One plan at a time; `events` forwards the current plan's."""

    BUSY = "Other models are running in shifts: run this pane again when they have finished (or Stop all)."

    def __init__(self, controller: SessionController, registry: BackendRegistry):
        self.controller, self.registry = controller, registry
        self.events = ShiftEvents()
        self.current: PaneShifts | None = None
        self.task: asyncio.Future | None = None

    def takes(self, panes: Sequence[PaneSpec]) -> bool:
        """Whether any of the panes that can run needs a model on standby."""
        return any(self.registry.on_standby(p.backend) and conversation.can_run(p) for p in panes)

    def start(self, panes: Sequence[PaneSpec], use_draft: bool = True) -> RunAll:
        """Plan and start: the panes that need no load start now, the rest when their model is loaded. While
        a plan runs, panes whose model is on standby are listed as problems and the others start as usual."""
        if self.current is not None:
            waiting = [p for p in panes if self.registry.on_standby(p.backend)]
            ids = {p.id for p in waiting}
            report = self.controller.run_many([p for p in panes if p.id not in ids], use_draft)
            return RunAll(report.started, report.skipped + len(waiting),
                          report.problems + tuple((p, self.BUSY) for p in waiting))
        runner = self.controller.runner
        planned = plan_for(panes, self.registry, runnable=lambda p: conversation.can_run(p) and not runner.busy(p))
        driver = PaneShifts(planned, self.controller, self.registry, use_draft)
        for name in ("progress", "problems", "finished"):  # relayed through a function (psygnal 0.16 calls a
            relay = getattr(self.events, name)  # connected `emit` of another signal once as it connects it)
            getattr(driver.events, name).connect(lambda value, relay=relay: relay.emit(value))
        self.current = driver
        self.events.started.emit(planned)
        try:
            begun = driver.begin()
            self.task = asyncio.ensure_future(self._drive(driver))
        except BaseException:
            self.current = None
            raise
        started = begun.started + sum(len(s.panes) for s in planned.shifts)
        return RunAll(started, max(0, len(panes) - started - len(planned.refused)), begun.problems)

    async def _drive(self, driver: PaneShifts) -> None:
        try:
            await driver.run()
        finally:
            self.current, self.task = None, None

    def cancel(self) -> None:
        if self.current is not None:
            self.current.cancel()


def controller_for(session: SessionModel, runner: SessionRunner, registry: BackendRegistry) -> SessionController:
    """The controller of a session whose panes may run on models on standby: its `loader` is a ModelShifts over
    `registry`, so Run all, a group's run and a pane's own Run plan models in shifts, whatever views show them."""
    controller = SessionController(session, runner)
    controller.loader = ModelShifts(controller, registry)
    return controller


__all__ = ["ModelShifts", "PaneShifts", "Progress", "ShiftEvents", "controller_for", "duration"]
