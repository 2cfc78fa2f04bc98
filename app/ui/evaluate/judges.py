"""The evaluation's judge in the window: the Evaluation view's judge menu (the main model, every other open
backend, a GGUF file…, a server…) and what picking one does. A mixin of EvalTools (it uses its `session`, `view`,
`run_control`, `window`, `running`, `run` and `sig_status`).

The judge picked last is remembered in the settings and judges new evaluations. Picking another for the shown
evaluation judges again the verdicts its old judge gave (after the new judge's calibration), their outputs kept;
it is refused while a run goes on.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QInputDialog

from app.evaluate import calibration
from app.ui.evaluate.view import judge_label
from app.ui.settings import EVAL_JUDGE


class EvalJudging:
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
