"""RunPump: applies the backends' step events to the session on the GUI thread, a few times a second.

Backends hand their events to the runner's thread-safe `feed` from their own threads; the first event after a
pump wakes this object through a queued Qt signal, and it pumps the runner FLUSH_MS later (FLUSH_MS_MANY once
more than FEW_RUNS runs are going, FLUSH_MS_CROWD above CROWDED_RUNS): every pane's result then changes once per
pump, and the views repaint once.
On a 2-core machine the GUI's painting competes with the model for CPU, and repainting 16 panes once per step
measurably slowed generation (docs/benchmarks.md).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.session import SessionRunner

FLUSH_MS = 100
FLUSH_MS_MANY = 333  # 3 Hz: measured 18% less GUI-thread CPU than 5 Hz with 16 panes, with the stats change
FEW_RUNS = 4
# 2 Hz above 8 runs: with 16 panes streaming, about 9 % less GUI-thread CPU than 3 Hz (4.3 % of a core against
# 4.7 %, means of 6 alternating runs each, ±0.4 points run to run; 2026-11-26, AMD EPYC 2 vCPU), and no one reads
# sixteen replies a token at a time.
FLUSH_MS_CROWD = 500
CROWDED_RUNS = 8


def flush_ms(active: int) -> int:
    """How long a pump waits after the first event, by the number of runs going."""
    return FLUSH_MS if active <= FEW_RUNS else FLUSH_MS_MANY if active <= CROWDED_RUNS else FLUSH_MS_CROWD


class RunPump(QObject):
    _sig_wake = Signal()
    """Emitted from a backend thread when events arrive; queued to the GUI thread."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.runner: SessionRunner | None = None
        self._timer = QTimer(self, singleShot=True, interval=FLUSH_MS)
        self._timer.timeout.connect(self.pump)
        self._sig_wake.connect(self._wake)

    def attach(self, runner: SessionRunner) -> None:
        self.runner = runner

    def notify(self) -> None:
        """Safe from any thread (the runner's `notify`)."""
        self._sig_wake.emit()

    def _wake(self) -> None:
        if not self._timer.isActive() and self.runner is not None:
            self._timer.start(flush_ms(self.runner.active))

    def pump(self) -> None:
        if self.runner is not None:
            self.runner.pump()
