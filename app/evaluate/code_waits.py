"""Cells whose grading runs the config's code (javascript / python checks, transforms) are graded on worker
threads, so a slow check never holds up the thread that owns the run (the window's GUI thread) nor the other
cells. `CodeWaits(post, arrived)`: `start(cell, work)` runs `work()` on a pool thread; its result comes back on the
owner's thread through `post` (SessionRunner.post), as `arrived(cell, result)`. A cell that waits keeps the
EvaluationRunner from being done; `cancel` hands the waiting cells back and their late results change nothing.
Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from app.session.evaluation import CellResult

THREADS = 2  # as many as Python workers (py_code.WORKERS): more would only queue there


class CodeWaits:
    def __init__(self, post: Callable[[Callable[[], None]], None], arrived: Callable[[CellResult, object], None]):
        self._post, self._arrived = post, arrived
        self._waiting: dict[int, CellResult] = {}
        self._pool: ThreadPoolExecutor | None = None

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def start(self, cell: CellResult, work: Callable[[], object], arrived=None) -> None:
        """Run `work()` on a pool thread; then `arrived(cell, result)` (default: the one given at creation) on the
        owner's thread."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="code-checks")
        self._waiting[id(cell)] = cell
        future = self._pool.submit(work)
        future.add_done_callback(lambda done: self._post(lambda: self._back(cell, done.result(), arrived)))

    def _back(self, cell: CellResult, result, arrived) -> None:
        if self._waiting.pop(id(cell), None) is not None:  # else cancelled meanwhile
            (arrived or self._arrived)(cell, result)

    def cancel(self) -> list[CellResult]:
        waiting, self._waiting = self._waiting, {}
        return list(waiting.values())
