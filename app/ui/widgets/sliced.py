"""Long work on the GUI thread in slices, the window handling its events between them.

`run_sliced(steps)` runs an iterator whose every step is a small piece of work (the session layer offers its
long changes that way: `SessionController.add_variants_steps`, `replace_steps`) for about SLICE_S, lets the
event loop turn, and goes on, returning when the last step is done: the caller's code reads as one call, the
window keeps painting and answering meanwhile (as in a dialog), and work that fits one slice runs at once with
no event loop at all. Inside a running asyncio task (qasync steps tasks from Qt events) a nested loop would step
other tasks inside this one, so there the steps run at once.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable

from PySide6.QtCore import QEventLoop, QTimer

from app.ui.widgets.off_thread import inside_a_task

SLICE_S = 0.025  # the most the GUI thread works before it handles events again


def run_sliced(steps: Iterable, budget_s: float | None = None) -> None:
    """Run every step of `steps`, for about `budget_s` (SLICE_S) at a time and at least one step, handling events
    between; an error a step raises is raised here, the steps after it not run."""
    budget_s = SLICE_S if budget_s is None else budget_s
    steps = iter(steps)
    if inside_a_task():
        collections.deque(steps, maxlen=0)
        return
    loop: QEventLoop | None = None
    outcome: dict = {}

    def some() -> bool:
        """One slice; True when the steps are done (or one failed)."""
        started = time.perf_counter()
        try:
            next(steps)
            while time.perf_counter() - started < budget_s:
                next(steps)
        except StopIteration:
            outcome["done"] = True
        except BaseException as exc:  # noqa: BLE001 (raised again by run_sliced)
            outcome["done"], outcome["error"] = True, exc
        if "done" in outcome:
            if loop is not None:
                loop.quit()
            return True
        QTimer.singleShot(0, some)
        return False

    if not some():
        loop = QEventLoop()
        loop.exec()
    if "error" in outcome:
        raise outcome["error"]
