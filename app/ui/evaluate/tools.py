"""The window's evaluations: File → Open evaluation…, Compare → New evaluation from panes…, what the Evaluation view
(EvalView) asks for, its judge menu, Export…, and a cell opened as a pane; the run itself is EvalRun's
(app/ui/evaluate/run.py). The window makes the view, its dock and the EvalRun, places them, and shows the dock when
`sig_show` says so.

The evaluation is the session's (`session.evaluation`), so it is autosaved with it and comes back after a
restart or a crash; its cells that had not finished are "not run" then, and Resume runs only those. The session
holds one evaluation: opening or making another replaces it (after asking, when the current one has results).

The judge menu offers the main model, every other open backend, a GGUF file… and a server…. The judge picked last
is remembered in the settings and judges new evaluations. Picking another for the shown evaluation judges again the
verdicts its old judge gave (after the new judge's calibration), their outputs kept; it is refused while a run goes
on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from app.evaluate import (
    CellResult,
    ConfigError,
    Evaluation,
    calibration,
    check_paths,
    load_config,
    write_outputs,
)
from app.evaluate.check_types import CheckError
from app.evaluate.panes import cell_pane, evaluation_from_panes
from app.evaluate.run_history import keep_and_restart
from app.evaluate.templates import TemplateProblem
from app.session import PaneSpec, SessionController, eval_runs
from app.session.consent import ConsentLedger
from app.ui.evaluate.code_consent import CodeConsent
from app.ui.evaluate.elsewhere import RunElsewhere
from app.ui.evaluate.run import EvalRun
from app.ui.evaluate.run_compare import RunCompareDialog
from app.ui.evaluate.view import EvalView, duration, judge_label
from app.ui.settings import EVAL_JUDGE
from app.ui.widgets.consent_bar import ConsentBar
from app.ui.widgets.off_thread import wait_beside

CONFIG_FILTER = "promptfoo configs (*.yaml *.yml *.json);;All files (*)"
VARS_FILTER = "Test cases (*.csv *.jsonl);;All files (*)"
EXPORT_FILTER = ("promptfoo results (*.json);;Table (*.csv);;Report (*.html);;JUnit XML (*.xml);;"
                 "JSON lines (*.jsonl);;YAML (*.yaml)")


class EvalTools(QObject):
    sig_status = Signal(str)
    """A short note for the status bar."""
    sig_show = Signal(bool, bool)
    """Whether the evaluation view should be visible (exactly when there is an evaluation), and whether one just
    arrived (then it deserves room)."""

    def __init__(self, controller: SessionController, view: EvalView, run_control: EvalRun, grid, show_message,
                 consent_bar: ConsentBar, consent: ConsentLedger, parent: QWidget):
        """`view` shows the session's evaluation and `run_control` runs it; `grid` is the pane grid (a cell opens
        as a pane); `show_message(title, text, icon)` shows a non-blocking message; `consent_bar` asks before a
        config's code runs and `consent` keeps what was agreed (the window's); `parent` parents dialogs."""
        super().__init__(parent)
        self.controller, self.session, self.grid = controller, controller.session, grid
        self.show_message, self.window = show_message, parent
        self.view, self.run_control = view, run_control
        self.view.sig_stop.connect(self.stop)
        self.view.sig_resume.connect(self.run)
        self.view.sig_open_cell.connect(self.open_cell)
        self.view.sig_export.connect(lambda: self.export())
        self.view.sig_run_again.connect(self.run_again)
        self.view.sig_compare_runs.connect(lambda: self.compare_runs())
        self.view.judge_button.menu().aboutToShow.connect(self._fill_judges)
        self.run_control.sig_status.connect(self.sig_status)
        self.consent = CodeConsent(consent_bar, consent)  # asks before a config's code first runs
        self.elsewhere = RunElsewhere(view, run_control.keys, run_control.main_model_name, self.run, parent)
        self.elsewhere.sig_status.connect(self.sig_status)
        run_control.sig_main_model.connect(self.elsewhere.show_where)
        self.session.events.evaluation.connect(self._replaced)
        self._show(self.session.evaluation)

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
        return self.act_new

    def show_if_any(self) -> None:
        """After the window restored its layout: the view shows exactly when there is an evaluation."""
        self.sig_show.emit(self.session.evaluation is not None, False)

    # --- making an evaluation -----------------------------------------------------------------------------------
    _reading = False  # a config is being read on a worker thread

    def open_config(self, path: str | Path | None = None, run: bool = True) -> bool:
        """Load a promptfoo config and run it; a config that cannot run is explained and changes nothing."""
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Open an evaluation", str(Path.home()), CONFIG_FILTER)
            if not path:
                return False
        path = Path(path).resolve()
        if self._reading:
            return False  # another config is being read
        self._reading = True
        try:  # read on a worker thread (a config can name a dataset to fetch): the window goes on meanwhile
            suite = wait_beside(lambda: load_config(path, any_provider=True), "chorus-read-config")
        except ConfigError as exc:
            count = len(exc.problems)
            listed = "\n".join(f"• {problem}" for problem in exc.problems)
            self.show_message("Cannot run this evaluation",
                              f"{path.name} cannot run as written ({count} problem{'s' * (count != 1)}):\n\n"
                              f"{listed}\n\nNothing was changed.", QMessageBox.Warning)
            return False
        except Exception as exc:  # noqa: BLE001 - any other load failure is a message too, never a crash
            self.show_message("Cannot open this evaluation", f"{path.name} cannot be read: {exc}\n\n"
                              "Nothing was changed.", QMessageBox.Warning)
            return False
        finally:
            self._reading = False
        if not self._may_replace():
            return False
        self.run_control.max_concurrency = suite.max_concurrency
        self._set(suite.evaluation(judge=self.judge))
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
        self.run_control.max_concurrency = None
        evaluation.judge = self.judge
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
        eval_runs.carry_over(self.session.evaluation, evaluation)  # the same config again: its runs are kept
        self.session.evaluation = evaluation  # -> _replaced

    def _replaced(self, evaluation, *_old) -> None:
        """The session's evaluation changed (opened, made, or a whole session opened): show it."""
        self.run_control.reset()
        self.elsewhere.reset()
        self._show(evaluation)
        self.sig_show.emit(evaluation is not None, evaluation is not None)

    def _show(self, evaluation: Evaluation | None) -> None:
        self.view.model.set_evaluation(evaluation)
        self.view.set_running(False)
        self.elsewhere.show_where()
        if evaluation is not None and evaluation.begun and evaluation.unfinished() and evaluation.duration_s:
            self.view.set_eta(f"ran {duration(evaluation.duration_s)} so far")  # stopped, or cut short by a crash

    # --- running ------------------------------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.run_control.running

    @property
    def base_dir(self) -> Path:
        source = self.session.evaluation.source if self.session.evaluation is not None else ""
        return Path(source).resolve().parent if source else Path.cwd()

    def run(self) -> asyncio.Future | None:
        """Run the cells that have not finished (all of a new evaluation); backends it needs open first. Providers
        whose servers are out of reach wait for the user's answer to the offer to run them here (elsewhere.py)."""
        evaluation = self.session.evaluation
        if evaluation is None or self.running or self.elsewhere.ask(evaluation):
            return None
        if not self.consent.allows(evaluation, self.base_dir, then=self.run):
            self.sig_status.emit("The evaluation runs code or sends outputs elsewhere: the bar at the top says what, "
                                 "and runs it")
            return None
        return self.run_control.run(evaluation, self.base_dir, code_allowed=True)  # allows(): all of it agreed to

    def stop(self) -> None:
        self.run_control.stop()

    def run_again(self) -> asyncio.Future | None:
        """Run every cell again; the run they hold is kept (Compare runs… shows what changed)."""
        evaluation = self.session.evaluation
        if evaluation is None or self.running:
            return None
        keep_and_restart(evaluation)
        self.view.model.set_evaluation(evaluation)
        self.sig_status.emit(f"Evaluation: run {len(evaluation.runs) + 1} started; the earlier runs are kept")
        return self.run()

    def compare_runs(self, old: int | None = None, new: int | None = None) -> RunCompareDialog | None:
        """The run comparison (the previous run against the current one unless told), as a window of its own."""
        evaluation = self.session.evaluation
        if evaluation is None or not evaluation.runs:
            return None
        dialog = RunCompareDialog(evaluation, self.window)
        last = len(evaluation.runs)
        dialog.pick(last - 1 if old is None else old, last if new is None else new)
        dialog.show()
        return dialog

    def export(self, path: str | Path | None = None) -> bool:
        """Write the results (promptfoo's results.json, .jsonl, .yaml, .csv, .html or JUnit .xml, by extension)."""
        evaluation = self.session.evaluation
        if evaluation is None:
            return False
        if path is None:
            start = str(self.base_dir / "results.json")
            path, _ = QFileDialog.getSaveFileName(self.window, "Export the evaluation's results", start, EXPORT_FILTER)
            if not path:
                return False
        problems = check_paths([path])
        try:
            if problems:
                raise OSError(problems[0].removeprefix("-o "))
            write_outputs(evaluation, [path])
        except OSError as exc:
            self.show_message("Could not export the results", str(exc), QMessageBox.Warning)
            return False
        self.sig_status.emit(f"Exported the evaluation to {Path(path).name}")
        return True

    # --- the judge ----------------------------------------------------------------------------------------------
    @property
    def judge(self) -> str:
        """The judge picked last (remembered in the settings): "local", a GGUF path or a server URL."""
        return self.run_control.settings.get(EVAL_JUDGE) or "local"

    def _fill_judges(self) -> None:
        """The judge menu: the main model, every other open backend, a GGUF file…, a server…"""
        menu = self.view.judge_button.menu()
        menu.clear()
        current = self.session.evaluation.judge if self.session.evaluation is not None else self.judge
        for judge, text in self.run_control.judges():
            action = menu.addAction(text, lambda judge=judge: self.set_judge(judge))
            action.setCheckable(True)
            action.setChecked(judge == current)
        menu.addSeparator()
        menu.addAction("A GGUF file…", self._pick_gguf)
        menu.addAction("An OpenAI-compatible server…", self._pick_server)

    def _pick_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "A model to judge with", str(Path.home()),
                                              "GGUF models (*.gguf);;All files (*)")
        if path:
            self.set_judge(str(Path(path).resolve()))

    def _pick_server(self) -> None:
        url, ok = QInputDialog.getText(self.window, "A server to judge with",
                                       "Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:8080/v1):")
        if ok and url.strip().startswith(("http://", "https://")):
            self.set_judge(url.strip().rstrip("/"))

    def set_judge(self, judge: str) -> bool:
        """Judge with `judge` from now on (remembered); the shown evaluation's verdicts by the judge it had are
        judged again by this one (after its calibration), their outputs kept. False while a run goes on."""
        evaluation = self.session.evaluation
        if self.running:
            self.sig_status.emit("Stop the evaluation before picking another judge")
            return False
        self.run_control.settings.set(EVAL_JUDGE, judge)
        if evaluation is None or evaluation.judge == judge:
            self.view.refresh()
            return True
        old = calibration.judge_key(evaluation, None)
        again = [cell for cell in evaluation.cells if cell.finished and cell.grading is not None and any(
            need.judge == old for need in calibration.needs(evaluation, {cell.case}))]
        evaluation.judge = judge
        evaluation.calibrations = [c for c in evaluation.calibrations if c.judge != old]
        for cell in again:
            cell.status = "grading"  # its output stays; the runner judges it again
        self.sig_status.emit(f"Judge: {judge_label(judge)}" + (f"; judging {len(again)} cells again" if again
                                                                else ""))
        if again:
            self.run()
        else:
            self.view.refresh()
        return True

    # --- a cell as a pane ---------------------------------------------------------------------------------------
    def open_cell(self, cell: CellResult) -> PaneSpec | None:
        """Open the cell as a new pane (its conversation and output), on the backend it ran on."""
        evaluation = self.session.evaluation
        backend = self.run_control.backend_of(evaluation.variants[cell.variant].target)
        try:
            spec = cell_pane(evaluation, cell, backend)
        except (TemplateProblem, CheckError) as exc:  # CheckError: its vars need code (transformVars) not run yet
            self.show_message("Cannot open the cell", str(exc), QMessageBox.Warning)
            return None
        added = self.controller.add_pane(spec)
        if view := self.grid.view_of(added):
            self.grid.reveal(view)
        self.sig_status.emit(f"Opened {added.label} as a pane")
        return added
