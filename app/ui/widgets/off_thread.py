"""Do slow, Qt-free work (reading and decoding a file) on a worker thread while the window goes on.

`wait_beside(work)` runs `work` on a thread of its own and handles the window's events meanwhile, as a modal
dialog does, then returns its result (or raises its exception) on the GUI thread. Called from inside a running
asyncio task, it runs `work` in place instead: qasync steps tasks from Qt events, so a nested Qt loop there would
enter another task while this one runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QEventLoop, QObject, Qt, Signal

T = TypeVar("T")


class _Finished(QObject):
    sig_done = Signal()
    """The worker is done (emitted on its thread)."""


def wait_beside(work: Callable[[], T], name: str) -> T:
    """`work()` on a worker thread named `name`, the window's events handled meanwhile; its result or exception."""
    if inside_a_task():
        return work()
    done: dict = {}
    waiting = QEventLoop()
    finished = _Finished()
    finished.sig_done.connect(waiting.quit, Qt.QueuedConnection)

    def run() -> None:
        try:
            done["result"] = work()
        except BaseException as exc:  # noqa: BLE001 (raised again on the GUI thread)
            done["error"] = exc
        finished.sig_done.emit()

    threading.Thread(target=run, daemon=True, name=name).start()
    if not done:
        waiting.exec()
    if "error" in done:
        raise done["error"]
    return done["result"]


def inside_a_task() -> bool:
    """True when called from inside a running asyncio task."""
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no running loop
        return False
