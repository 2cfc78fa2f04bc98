"""Long work on the GUI thread in slices, the window handling its events between them.

`run_sliced(steps)` runs an iterator whose every step is a small piece of work (the session layer offers its long
changes that way: `SessionController.add_variants_steps`, `replace_steps`, `run_many_steps`) for about SLICE_S,
lets the event loop turn, and goes on, returning when the last step is done (with what a generator returns, such as
Run all's report): the caller's code reads as one call, the window keeps painting and answering meanwhile (as in a
dialog), and work that fits one slice runs at once with no event loop at all. Inside a running asyncio task (qasync
steps tasks from Qt events) a nested loop would step other tasks inside this one, so there the steps run at once.

Every sliced job of the window (`run_sliced`'s, and `share_turns`' others: the grid building the panes on screen,
the comparison table working out similarities) takes its steps from one queue, SLICE_S of them all per
event-loop turn, the jobs taking turns step by step: a job of its own timer each, several jobs due in the same turn
(a sweep's slice, the panes it brought on screen) ran there one after another, two or three slices in one turn.
Work that follows from a turn's steps (the grid placing the panes they added) ends the turn, inside its budget
(`end_turns_with`): on a timer of its own it ran after the turn, in the same pass of the event loop.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable

from PySide6.QtCore import QEventLoop, QTimer

from app.ui.widgets.off_thread import inside_a_task

log = logging.getLogger("chorus.ui.sliced")
# The most the GUI thread works at sliced work before it handles events again. The painting a turn causes comes on
# top (~20 ms while a 256-pane session opens): at 25 ms the turn and its painting made gaps of 51-54 ms.
SLICE_S = 0.020


class _Job:
    __slots__ = ("step", "budget_s", "cost_s")

    def __init__(self, step: Callable[[], bool], budget_s: float | None):
        self.step, self.budget_s, self.cost_s = step, budget_s, 0.0  # cost_s: what its last step took


class _Closer:
    __slots__ = ("ref", "cost_s")

    def __init__(self, callback: Callable[[], None]):
        self.ref, self.cost_s = weakref.WeakMethod(callback), 0.0  # cost_s: what it took last


class _Turns:
    """The queue of sliced jobs, each a `step()` doing one small piece and returning True while more is left. Each
    event-loop turn runs steps of the jobs in turn, at least one, while the turn's budget (SLICE_S, or a job's own
    smaller one) has room for the next job's step at what its last step took: a step is never started to end past
    the budget (a pane's build takes 15-60 ms; started at 24 ms, it made a turn of 40-70)."""

    def __init__(self):
        self.jobs: deque[_Job] = deque()
        self.closers: list[_Closer] = []
        self._timer: QTimer | None = None

    def add(self, step: Callable[[], bool], budget_s: float | None = None) -> None:
        if not any(job.step == step for job in self.jobs):  # == : a bound method is made anew each time
            self.jobs.append(_Job(step, budget_s))  # None: SLICE_S, as it is when the turn runs
        if self._timer is None:
            # A timer of its own, not a posted call: Qt handles posted calls before timers, so turns posted one
            # after another would hold the window's timers (its pump, its stats) for two turns at a time.
            self._timer = QTimer(singleShot=True, interval=0)
            self._timer.timeout.connect(self.run)
        self._timer.start()

    def run(self) -> None:
        """One turn's share of the jobs' steps."""
        started = time.perf_counter()
        budget = min([SLICE_S, *(job.budget_s for job in self.jobs if job.budget_s is not None)]) - self.reserved_s()
        ran = 0
        while self.jobs:
            job = self.jobs[0]
            begun = time.perf_counter()
            if ran and begun - started + job.cost_s > budget:
                break  # its step would end past the budget: first in the next turn
            self.jobs.popleft()
            try:
                more = job.step()
            except Exception:  # noqa: BLE001 (its owner went away meanwhile, say): the others go on
                log.exception("sliced work failed")
                more = False
            ran += 1
            job.cost_s = time.perf_counter() - begun
            if more:
                self.jobs.append(job)
            if time.perf_counter() - started >= budget:
                break
        self.close()
        if self.jobs and self._timer is not None:
            self._timer.start()


    def close(self) -> None:
        """The turn's closing work (`end_turns_with`)."""
        for closer in list(self.closers):
            callback = closer.ref()
            if callback is None:  # its owner is gone
                self.closers.remove(closer)
                continue
            begun = time.perf_counter()
            try:
                callback()
            except RuntimeError:  # its widget was deleted (its Python side lives on): it ends no more turns
                self.closers.remove(closer)
            except Exception:  # noqa: BLE001 (the turn goes on)
                log.exception("a sliced turn's closing work failed")
                self.closers.remove(closer)
            closer.cost_s = time.perf_counter() - begun

    def reserved_s(self) -> float:
        """What the closing work took last time: the room a turn's steps leave it."""
        return sum(closer.cost_s for closer in self.closers)


_turns = _Turns()


def end_turns_with(callback: Callable[[], None]) -> None:
    """Call `callback` (a bound method, held weakly: it goes with its object) at the end of every sliced turn,
    after the steps, which leave it room in the turn's budget by what it took last time: work that follows from
    the steps, done once for all of a turn's (the grid placing the panes a turn of a sweep added)."""
    _turns.closers.append(_Closer(callback))


def share_turns(step: Callable[[], bool]) -> None:
    """Run `step` (one small piece of work a call; True while more is left) in the window's sliced turns, beside
    the other sliced work; adding a job already queued does nothing."""
    _turns.add(step)


def run_sliced(steps: Iterable, budget_s: float | None = None):
    """Run every step of `steps`, for about `budget_s` (SLICE_S) at a time and at least one step, handling events
    between; returns what `steps` returned (a generator's return value, else None). An error a step raises is
    raised here, the steps after it not run."""
    steps = iter(steps)
    if inside_a_task():
        budget_s = float("inf")
    loop: QEventLoop | None = None
    outcome: dict = {}

    def step() -> bool:
        """One step; False when the steps are done (or one failed)."""
        try:
            next(steps)
            return True
        except StopIteration as stop:
            outcome["done"], outcome["value"] = True, stop.value
        except BaseException as exc:  # noqa: BLE001 (raised again by run_sliced)
            outcome["done"], outcome["error"] = True, exc
        if loop is not None:
            loop.quit()
        return False

    started, first = time.perf_counter(), (SLICE_S if budget_s is None else budget_s) - _turns.reserved_s()
    while step() and time.perf_counter() - started < first:  # the first slice at once, a turn's work as any
        pass
    _turns.close()
    if "done" not in outcome:
        loop = QEventLoop()
        _turns.add(step, budget_s)
        loop.exec()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
