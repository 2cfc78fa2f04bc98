"""Long work on the GUI thread in slices, the window handling its events between them.

`run_sliced(steps)` runs an iterator whose every step is a small piece of work (the session layer offers its long
changes that way: `SessionController.add_variants_steps`, `replace_steps`, `run_many_steps`) for about SLICE_S,
lets the event loop turn, and goes on, returning when the last step is done (with what a generator returns, such as
Run all's report): the caller's code reads as one call, the window keeps painting and answering meanwhile (as in a
dialog), and work that fits one slice runs at once with no event loop at all. Inside a running asyncio task (qasync
steps tasks from Qt events) a nested loop would step other tasks inside this one, so there the steps run at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from PySide6.QtCore import QEventLoop, QTimer

from app.ui.widgets.off_thread import inside_a_task

SLICE_S = 0.025  # the most the GUI thread works before it handles events again


def run_sliced(steps: Iterable, budget_s: float | None = None):
    """Run every step of `steps`, for about `budget_s` (SLICE_S) at a time and at least one step, handling events
    between; returns what `steps` returned (a generator's return value, else None). An error a step raises is
    raised here, the steps after it not run."""
    budget_s = SLICE_S if budget_s is None else budget_s
    steps = iter(steps)
    if inside_a_task():
        budget_s = float("inf")
    loop: QEventLoop | None = None
    outcome: dict = {}
    # The next slice is a timer of its own, not a posted call: Qt handles posted calls before timers, so slices
    # posted one after another would hold the window's timers (its pump, its stats) for two slices at a time.
    following = QTimer(singleShot=True, interval=0)

    def some() -> bool:
        """One slice; True when the steps are done (or one failed)."""
        started = time.perf_counter()
        try:
            next(steps)
            while time.perf_counter() - started < budget_s:
                next(steps)
        except StopIteration as stop:
            outcome["done"], outcome["value"] = True, stop.value
        except BaseException as exc:  # noqa: BLE001 (raised again by run_sliced)
            outcome["done"], outcome["error"] = True, exc
        if "done" in outcome:
            if loop is not None:
                loop.quit()
            return True
        following.start()
        return False

    following.timeout.connect(some)
    if not some():
        loop = QEventLoop()
        loop.exec()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
