"""The window's evaluations: File → Open evaluation…, Compare → New evaluation from panes…, the evaluation dock,
and the run behind it (an EvaluationRunner over the window's SessionRunner, so generations and judges join the
same batches as the panes' runs).

The evaluation is the session's (`session.evaluation`), so it is autosaved with it and comes back after a
restart or a crash; its cells that had not finished are "not run" then, and Resume runs only those. Backends a
config names that are not open yet (another GGUF, a server) are opened first; the main model serves "local",
a `file://` GGUF that is the main model's file, the default judge, and panes on "local".
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QFileDialog, QMainWindow, QMessageBox

from app.engine import limits
from app.session import MAIN, PaneSpec, SessionController, SessionRunner
from app.session.eval_routes import Routes, api_key
from app.session.eval_runner import EvaluationRunner, needed_targets
from app.session.evaluate import CellResult, ConfigError, Evaluation, load_config, stats
from app.session.evaluate.panes import cell_pane, evaluation_from_panes
from app.session.evaluate.templates import TemplateProblem
from app.ui.eval_view import EvalView, duration, eta_seconds

CONFIG_FILTER = "promptfoo configs (*.yaml *.yml *.json);;All files (*)"
VARS_FILTER = "Test cases (*.csv *.jsonl);;All files (*)"


class EvalTools(QObject):
    sig_status = Signal(str)
    """A short note for the status bar."""

    def __init__(self, controller: SessionController, runner: SessionRunner, bridge, settings, keys, grid,
                 show_message, on_changed, window: QMainWindow):
        """`keys()` is the API key store; `show_message(title, text, icon)` shows a non-blocking message;
        `on_changed()` tells autosave that the evaluation changed (its cells are not session events)."""
        super().__init__(window)
        self.controller, self.session, self.runner = controller, controller.session, runner
        self.bridge, self.settings, self.keys, self.grid = bridge, settings, keys, grid
        self.show_message, self.on_changed, self.window = show_message, on_changed, window
        self.routes = Routes(lambda: self.bridge.model_info.path if self.bridge.model_info else "",
                             self.bridge.backends.specs)
        self.eval_runner: EvaluationRunner | None = None
        self.results: dict = {}  # (case, variant, repeat) -> the generation's PaneResult, from runs of this window
        self.max_concurrency: int | None = None
        self._starting = False
        self._started_at, self._todo = 0.0, 0
        self.view = EvalView()
        self.dock = QDockWidget("Evaluation", window)
        self.dock.setObjectName("evalDock")
        self.dock.setWidget(self.view)
        window.setCorner(Qt.BottomRightCorner, Qt.RightDockWidgetArea)
        window.addDockWidget(Qt.BottomDockWidgetArea, self.dock)
        self.dock.hide()
        self.view.sig_stop.connect(self.stop)
        self.view.sig_resume.connect(self.run)
        self.view.sig_open_cell.connect(self.open_cell)
        self.eta_timer = QTimer(self, interval=1000)
        self.eta_timer.timeout.connect(self._tick)
        self.session.events.evaluation.connect(self._replaced)
        self.view.model.set_evaluation(self.session.evaluation)
        self.view.set_running(False)

    # --- menus --------------------------------------------------------------------------------------------------
    def build_file_menu(self, menu, before: QAction) -> QAction:
        self.act_open = QAction("Open evaluation…", self.window, statusTip="Open a promptfoo config and run it")
        self.act_open.setShortcut("Ctrl+Shift+E")
        self.act_open.triggered.connect(lambda: self.open_config())
        menu.insertAction(before, self.act_open)
        menu.insertSeparator(before)
        return self.act_open

    def build_compare_menu(self, menu) -> QAction:
        menu.addSeparator()
        self.act_new = QAction("New evaluation from panes…", self.window,
                               statusTip="Each pane becomes a variant; test cases from a CSV or JSONL of vars")
        self.act_new.triggered.connect(self.new_from_panes_asked)
        menu.addAction(self.act_new)
        menu.addAction(self.dock.toggleViewAction())
        return self.act_new

    def show_if_any(self) -> None:
        """After the window restored its layout: the dock shows exactly when there is an evaluation."""
        self.dock.setVisible(self.session.evaluation is not None)

    # --- making an evaluation -----------------------------------------------------------------------------------
    def open_config(self, path: str | Path | None = None, run: bool = True) -> bool:
        """Load a promptfoo config and run it; a config that cannot run is explained and changes nothing."""
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Open an evaluation", str(Path.home()), CONFIG_FILTER)
            if not path:
                return False
        path = Path(path).resolve()
        try:
            suite = load_config(path)
        except ConfigError as exc:
            count = len(exc.problems)
            listed = "\n".join(f"• {problem}" for problem in exc.problems)
            self.show_message("Cannot run this evaluation",
                              f"{path.name} cannot run as written ({count} problem{'s' * (count != 1)}):\n\n"
                              f"{listed}\n\nNothing was changed.", QMessageBox.Warning)
            return False
        if not self._may_replace():
            return False
        self.max_concurrency = suite.max_concurrency
        self._set(suite.evaluation(judge="local"))
        self.sig_status.emit(f"Opened {path.name}: {len(suite.cases)} test cases × {len(suite.variants)} variants")
        if run:
            self.run()
        return True

    def new_from_panes_asked(self) -> Evaluation | None:
        box = QMessageBox(QMessageBox.Question, "New evaluation from panes",
                          "Each pane becomes a variant: its prompt (write {{vars}} in it), system prompt, settings "
                          "and backend.\n\nTest cases come from a CSV or JSONL file of vars (a column per var; "
                          "promptfoo's __expected columns add checks). Without one, each pane's prompt runs once.",
                          QMessageBox.Cancel, self.window)
        from_file = box.addButton("Choose a vars file…", QMessageBox.AcceptRole)
        once = box.addButton("One case, no vars", QMessageBox.AcceptRole)
        box.exec()
        if box.clickedButton() is from_file:
            path, _ = QFileDialog.getOpenFileName(self.window, "Test cases", str(Path.home()), VARS_FILTER)
            return self.new_from_panes(path) if path else None
        return self.new_from_panes(None) if box.clickedButton() is once else None

    def new_from_panes(self, vars_file: str | Path | None, run: bool = True) -> Evaluation | None:
        panes = [p for p in self.session.panes if p.draft.strip() or any(t["role"] == "user" for t in p.turns)]
        try:
            evaluation = evaluation_from_panes(panes, Path(vars_file).resolve() if vars_file else None)
        except (ConfigError, ValueError) as exc:
            self.show_message("Cannot make the evaluation", str(exc), QMessageBox.Warning)
            return None
        if not self._may_replace():
            return None
        self.max_concurrency = None
        self._set(evaluation)
        if run:
            self.run()
        return evaluation

    def _may_replace(self) -> bool:
        """The session holds one evaluation: ask before replacing one that has results."""
        old = self.session.evaluation
        if old is None or not any(cell.finished for cell in old.cells):
            return True
        answer = QMessageBox.question(self.window, "Replace the evaluation",
                                      "This session's evaluation and its results will be replaced. Continue?\n\n"
                                      "(Save the session first to keep them.)")
        return answer == QMessageBox.Yes

    def _set(self, evaluation: Evaluation) -> None:
        self.stop()
        self.session.evaluation = evaluation  # -> _replaced

    def _replaced(self, evaluation, *_old) -> None:
        """The session's evaluation changed (opened, made, or a whole session opened): show it."""
        if self.eval_runner is not None:
            self._detach()
        self.results = {}
        self.view.model.set_evaluation(evaluation)
        self.view.set_running(False)
        self.view.set_eta("")
        self.show_if_any()
        if evaluation is not None:
            self.window.resizeDocks([self.dock], [int(self.window.height() * 0.62)], Qt.Vertical)

    # --- running ------------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.eval_runner is not None or self._starting

    @property
    def base_dir(self) -> Path:
        source = self.session.evaluation.source if self.session.evaluation is not None else ""
        return Path(source).resolve().parent if source else Path.cwd()

    def run(self) -> asyncio.Future | None:
        """Run the cells that have not finished (all of a new evaluation); backends it needs open first."""
        evaluation = self.session.evaluation
        if evaluation is None or self.running or not evaluation.unfinished():
            return None
        self._starting = True
        self.view.set_running(True)
        return asyncio.ensure_future(self._open_and_start(evaluation))

    async def _open_and_start(self, evaluation: Evaluation) -> bool:
        try:
            targets = needed_targets(evaluation, self.base_dir)
            for target, spec in self.routes.missing(targets):
                self.sig_status.emit(f"Evaluation: connecting {spec.name}…")
                key = api_key(target, self.keys()) if spec.kind == "server" else None
                opened = await self.bridge.add_backend(spec, api_key=key, engine=self.settings.engine_fields())
                self.routes.opened(target, opened.name)
            if self.bridge.main is None and any(self.routes.find(t) == MAIN for t in targets):
                raise RuntimeError("No model is loaded yet: wait for it to load (or open one), then Resume.")
        except Exception as exc:  # noqa: BLE001 - a backend's own message, shown; nothing has run
            self._starting = False
            self.view.set_running(False)
            if self.session.evaluation is evaluation:
                self.show_message("Cannot run the evaluation", str(exc) or type(exc).__name__, QMessageBox.Warning)
            return False
        self._starting = False
        if self.session.evaluation is not evaluation or self.eval_runner is not None:
            return False  # replaced while backends opened
        self._start(evaluation)
        return True

    def _start(self, evaluation: Evaluation) -> None:
        runner = EvaluationRunner(evaluation, self.runner, self.routes.name, self.base_dir, self.max_concurrency,
                                  alternatives=limits.ALTERNATIVES_SHOWN)
        runner.events.cell_changed.connect(self._cell_changed)
        runner.events.finished.connect(self._finished)
        self.eval_runner = runner
        self._started_at, self._todo = time.monotonic(), len(evaluation.unfinished())
        self.view.set_running(True)
        self.view.set_eta("estimating…")
        self.eta_timer.start()
        runner.start()

    def stop(self) -> None:
        """Stop the run: nothing more starts, what runs is cancelled; cut-short cells stay "not run"."""
        if self.eval_runner is not None:
            self.eval_runner.cancel()

    def _cell_changed(self, cell: CellResult) -> None:
        self.view.model.cell_changed(cell)
        self.on_changed()

    def _tick(self) -> None:
        evaluation = self.session.evaluation
        if evaluation is None or self.eval_runner is None:
            return
        done = self._todo - len(evaluation.unfinished())
        eta = eta_seconds(done, self._todo, time.monotonic() - self._started_at)
        self.view.set_eta("estimating…" if eta is None else f"ETA {duration(eta)}")

    def _finished(self) -> None:
        runner = self._detach()
        if runner is None:
            return
        evaluation = runner.evaluation
        totals = stats.totals(evaluation)
        how = "stopped" if runner.cancelled else "finished"
        self.view.set_eta(f"{how} after {duration(time.monotonic() - self._started_at)}")
        note = (f"Evaluation {how}: {totals.successes} passed, {totals.failures} failed, {totals.errors} errors"
                + (f", {totals.pending} not run" if totals.pending else ""))
        QTimer.singleShot(0, lambda: self.sig_status.emit(note))  # after the runner's own "finished" note
        self.on_changed()

    def _detach(self) -> EvaluationRunner | None:
        runner, self.eval_runner = self.eval_runner, None
        if runner is None:
            return None
        runner.events.cell_changed.disconnect(self._cell_changed)
        runner.events.finished.disconnect(self._finished)
        if not runner.done:
            runner.cancel()
        self.results.update(runner.results)
        self.eta_timer.stop()
        self.view.model.flush()
        self.view.set_running(False)
        return runner

    # --- a cell as a pane ---------------------------------------------------------------------------------------
    def open_cell(self, cell: CellResult) -> PaneSpec | None:
        """Open the cell as a new pane (its conversation and output), on the backend it ran on."""
        evaluation = self.session.evaluation
        key = (cell.case, cell.variant, cell.repeat)
        result = self.results.get(key) or (self.eval_runner.results.get(key) if self.eval_runner else None)
        backend = self.routes.find(evaluation.variants[cell.variant].target) or MAIN
        try:
            spec = cell_pane(evaluation, cell, backend, result)
        except TemplateProblem as exc:
            self.show_message("Cannot open the cell", str(exc), QMessageBox.Warning)
            return None
        added = self.controller.add_pane(spec)
        if view := self.grid.view_of(added):
            self.grid.ensureWidgetVisible(view)
        self.sig_status.emit(f"Opened {added.label} as a pane")
        return added
