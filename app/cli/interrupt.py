"""Ctrl+C for the headless commands (`run`, `eval`): a SIGINT handler that only counts, checked by the command.

A handler that raises KeyboardInterrupt is lost when the signal lands where Python swallows exceptions (a weakref
finalizer, a `__del__`, a callback run by C code: "Exception ignored in …"), and the command then ends as if
nothing happened. Counting instead means every Ctrl+C is seen at the command's next check: the first asks it to
cancel and write what it has, the second to stop waiting for the cancelled work. The previous handler is
restored on exit. Must be entered on the main thread (Python delivers signals there only).
"""

from __future__ import annotations

import signal
import threading


class Interrupt:
    """`with Interrupt() as ctrl_c:` … `if ctrl_c.requested:` cancel; `if ctrl_c.hurried:` stop draining."""

    def __init__(self) -> None:
        self.count = 0
        self.event = threading.Event()  # set at the first Ctrl+C, for waits that want to wake on it
        self._previous = None

    def __enter__(self) -> Interrupt:
        self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *_exc) -> None:
        signal.signal(signal.SIGINT, self._previous if self._previous is not None else signal.default_int_handler)

    def _handle(self, _signum, _frame) -> None:
        self.count += 1
        self.event.set()

    @property
    def requested(self) -> bool:
        return self.count > 0

    @property
    def hurried(self) -> bool:
        return self.count > 1
