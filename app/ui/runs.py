"""RunCoordinator: submits panes to the engine and routes each step's text and states to the right pane.

It subscribes to the bridge's one per-step signal and looks panes up by request id. Step events are merged
and applied at most every FLUSH_MS (FLUSH_MS_MANY once more than FEW_RUNS panes run): on a 2-core machine the
GUI thread's painting competes with the model for CPU, and repainting 16 panes once per step measurably slowed
generation (docs/benchmarks.md).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.engine import Completion, RequestHandle, RequestState, StepEvent
from app.ui.bridge import EngineBridge
from app.ui.pane_grid import PaneGrid
from app.ui.prompt_pane import PromptPane

FLUSH_MS = 100
FLUSH_MS_MANY = 200
FEW_RUNS = 4


class RunCoordinator(QObject):
    sig_message = Signal(str)
    """A short note for the status bar (e.g. how many panes Run all started)."""
    sig_all_finished = Signal()
    """The last running pane finished: nothing is queued or generating any more."""

    def __init__(self, bridge: EngineBridge, grid: PaneGrid, parent: QObject | None = None):
        super().__init__(parent)
        self.bridge = bridge
        self.grid = grid
        self._runs: dict[int, tuple[RequestHandle, PromptPane]] = {}
        self._pending: list[StepEvent] = []
        self._flush_timer = QTimer(self, singleShot=True, interval=FLUSH_MS)
        self._flush_timer.timeout.connect(self.flush)
        bridge.sig_step.connect(self.on_step)
        grid.sig_pane_added.connect(self._connect_pane)
        grid.sig_pane_removed.connect(self._forget_pane)
        self._ticker = QTimer(self, interval=500)  # live wait/TTFT/tok/s figures in busy panes, 2 Hz
        self._ticker.timeout.connect(self._tick)
        self._ticker.start()

    def _connect_pane(self, pane: PromptPane) -> None:
        pane.sig_run_requested.connect(self.run_pane)
        pane.sig_stop_requested.connect(self.stop_pane)

    def run_pane(self, pane: PromptPane) -> bool:
        if pane.busy:
            return False
        try:
            request = pane.build_request()
            handle = self.bridge.submit(request)
        except (ValueError, RuntimeError) as exc:
            pane.show_error(str(exc))
            return False
        self._runs[handle.id] = (handle, pane)
        pane.start(handle.id)
        return True

    def stop_pane(self, pane: PromptPane) -> None:
        run = self._runs.get(pane.request_id) if pane.request_id is not None else None
        if run:
            run[0].cancel()

    def _forget_pane(self, pane: PromptPane) -> None:
        """A pane is going away: stop its run and never touch the widget again."""
        run = self._runs.pop(pane.request_id, None) if pane.request_id is not None else None
        if run:
            run[0].cancel()

    def run_all(self) -> int:
        ready = [p for p in self.grid.panes if not p.busy and p.prompt.toPlainText().strip()]
        started = sum(self.run_pane(p) for p in ready)
        skipped = len(self.grid.panes) - len(ready)
        note = f"Started {started} pane(s)" + (f"; {skipped} skipped (empty or already running)" if skipped else "")
        self.sig_message.emit(note)
        return started

    def stop_all(self) -> None:
        for handle, _pane in list(self._runs.values()):
            handle.cancel()

    @property
    def active_runs(self) -> int:
        return len(self._runs)

    def on_step(self, event: StepEvent) -> None:
        self._pending.append(event)
        if not self._flush_timer.isActive():
            self._flush_timer.start(FLUSH_MS if len(self._runs) <= FEW_RUNS else FLUSH_MS_MANY)

    def flush(self) -> None:
        """Apply every pending step event: one state change, one text insert per pane, then completions."""
        events, self._pending = self._pending, []
        states: dict[int, RequestState] = {}
        deltas: dict[int, list[str]] = {}
        tokens: dict[int, int] = {}
        finished: list[Completion] = []
        for event in events:  # a request gets no events after the one that finishes it, so merging is safe
            states.update(event.states)
            for request_id, delta in event.deltas.items():
                deltas.setdefault(request_id, []).append(delta)
            tokens.update(event.tokens)
            finished.extend(event.finished)
        done = {c.request_id for c in finished}
        for request_id, state in states.items():
            run = self._runs.get(request_id)
            if run and request_id not in done:
                run[1].set_state(state)
        for request_id, parts in deltas.items():
            run = self._runs.get(request_id)
            if run:
                run[1].append_text("".join(parts), tokens.get(request_id))
        for completion in finished:
            run = self._runs.pop(completion.request_id, None)
            if run:
                run[1].finish(completion)
        if finished and not self._runs:
            self.sig_all_finished.emit()

    def _tick(self) -> None:
        for _handle, pane in self._runs.values():
            pane.tick()
