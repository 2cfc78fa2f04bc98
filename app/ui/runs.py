"""RunCoordinator: the window's side of the session runner — submits panes, feeds step events to the model,
and tells each pane view what changed.

The session (`app.session.SessionRunner`) holds runs, states and timings; this class only schedules and
renders. Step events are merged and applied at most every FLUSH_MS (FLUSH_MS_MANY once more than FEW_RUNS panes
run): on a 2-core machine the GUI thread's painting competes with the model for CPU, and repainting 16 panes
once per step measurably slowed generation (docs/benchmarks.md).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.engine import StepEvent
from app.session import SessionRunner, conversation
from app.ui.bridge import EngineBridge
from app.ui.pane_grid import PaneGrid
from app.ui.prompt_pane import PromptPane

FLUSH_MS = 100
FLUSH_MS_MANY = 333  # 3 Hz: measured 18% less GUI-thread CPU than 5 Hz with 16 panes, with the stats change
FEW_RUNS = 4


class RunCoordinator(QObject):
    sig_message = Signal(str)
    """A short note for the status bar (e.g. how many panes Run all started)."""
    sig_all_finished = Signal()
    """The last running pane finished: nothing is queued or generating any more."""
    sig_session_changed = Signal()
    """Runs changed the session (a run started, text streamed in, a run ended): time to autosave."""

    def __init__(self, bridge: EngineBridge, grid: PaneGrid, parent: QObject | None = None):
        super().__init__(parent)
        self.bridge = bridge
        self.grid = grid
        self.runner = SessionRunner(grid.session, bridge.submit)
        self._views: dict[int, PromptPane] = {}  # request id -> the view of its pane
        self._pending: list[StepEvent] = []
        self._flush_timer = QTimer(self, singleShot=True, interval=FLUSH_MS)
        self._flush_timer.timeout.connect(self.flush)
        bridge.sig_step.connect(self.on_step)
        grid.sig_pane_added.connect(self._connect_pane)
        grid.sig_pane_removed.connect(self._forget_pane)
        for pane in grid.panes:  # views made before this coordinator existed (a restored session)
            self._connect_pane(pane)
        self._ticker = QTimer(self, interval=500)  # live wait/TTFT/tok/s figures in busy panes, 2 Hz
        self._ticker.timeout.connect(self._tick)
        self._ticker.start()

    def use_session(self, session) -> None:
        """A new or opened session replaces the current one (the caller stopped every run first)."""
        self.runner = SessionRunner(session, self.bridge.submit)
        self._views.clear()
        self._pending.clear()

    def _connect_pane(self, pane: PromptPane) -> None:
        pane.sig_run_requested.connect(self.run_pane)
        pane.sig_rerun_requested.connect(lambda p: self.run_pane(p, use_draft=False))
        pane.sig_stop_requested.connect(self.stop_pane)
        pane.sig_branch_requested.connect(self.branch)
        pane.options.set_checker(self._check_grammar)

    def _check_grammar(self, grammar: str | None, json_schema: dict | None) -> str | None:
        """The loaded model's grammar parser (none loaded: the schema converter's checks only)."""
        engine = self.bridge.engine
        return engine.check_grammar(grammar, json_schema) if engine is not None else None

    def branch(self, pane: PromptPane, token_index: int, token_text: str) -> PromptPane | None:
        """A new pane next to `pane` continuing its last reply from another token, run at once."""
        try:
            spec = conversation.branch(pane.spec, token_index, token_text)
        except ValueError as exc:
            pane.show_error(str(exc))
            return None
        view = self.grid.add_pane(spec, after=pane)
        self.run_pane(view)
        return view

    def run_pane(self, pane: PromptPane, use_draft: bool = True) -> bool:
        if pane.busy:
            return False
        try:
            pane.commit_form()
            handle = self.runner.run(pane.spec, use_draft=use_draft)
        except (ValueError, RuntimeError) as exc:
            pane.show_error(str(exc))
            return False
        self._views[handle.id] = pane
        pane.started(handle.id)
        self.sig_session_changed.emit()
        return True

    def stop_pane(self, pane: PromptPane) -> None:
        self.runner.cancel(pane.spec)

    def _forget_pane(self, pane: PromptPane) -> None:
        """A pane is going away: stop its run and never touch the widget again."""
        self.runner.forget(pane.spec)
        for request_id, view in list(self._views.items()):
            if view is pane:
                del self._views[request_id]

    def run_all(self) -> int:
        ready = [p for p in self.grid.panes if not p.busy and conversation.can_run(p.spec)]
        started = sum(self.run_pane(p) for p in ready)
        skipped = len(self.grid.panes) - len(ready)
        note = f"Started {started} pane(s)" + (f"; {skipped} skipped (empty or already running)" if skipped else "")
        self.sig_message.emit(note)
        return started

    def stop_all(self) -> None:
        self.runner.cancel_all()

    @property
    def active_runs(self) -> int:
        return self.runner.active

    def on_step(self, event: StepEvent) -> None:
        self._pending.append(event)
        if not self._flush_timer.isActive():
            self._flush_timer.start(FLUSH_MS if self.runner.active <= FEW_RUNS else FLUSH_MS_MANY)

    def flush(self) -> None:
        """Fold every pending step into the session, then update each affected view once."""
        events, self._pending = self._pending, []
        deltas: dict[int, list[str]] = {}
        touched: set[int] = set()
        ended = []
        for event in events:  # a request gets no events after the one that finishes it, so merging is safe
            for request_id, delta in event.deltas.items():
                deltas.setdefault(request_id, []).append(delta)
            touched.update(event.states)
            ended += [c.request_id for c in event.finished]
            self.runner.apply(event)
        for request_id, parts in deltas.items():
            view = self._views.get(request_id)
            if view and request_id not in ended:
                view.append_text("".join(parts))
        for request_id in touched - set(ended):
            if view := self._views.get(request_id):
                view.show_state()
        for request_id in ended:
            if view := self._views.pop(request_id, None):
                view.finished()
        if ended or deltas:  # streamed text is autosaved too (at most once per AUTOSAVE_MS)
            self.sig_session_changed.emit()
        if ended and not self.runner.active:
            self.sig_all_finished.emit()

    def _tick(self) -> None:
        for view in self._views.values():
            view.tick()
