"""Before the first run of an evaluation whose config runs code (javascript / python checks, transforms), the
window names every file and inline check that would run and asks; nothing runs code until the user agrees. The
answer holds for that evaluation while it is the session's; another one (or the same after a restart) asks
again. Declining runs nothing."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

from app.evaluate.code_checks import code_uses
from app.session.evaluation import Evaluation

SHOWN = 12  # lines listed in the question; the rest are counted


class CodeConsent:
    def __init__(self, parent: QWidget):
        self.parent = parent
        self._allowed: Evaluation | None = None

    def question(self, uses: list[str]) -> str:
        listed = "\n".join(f"• {line}" for line in uses[:SHOWN])
        more = f"\n…and {len(uses) - SHOWN} more" if len(uses) > SHOWN else ""
        return ("This evaluation runs code from its config, on this computer, with your permissions:\n\n"
                f"{listed}{more}\n\nRun it only if you trust where the config came from. Run this code?")

    def allows(self, evaluation: Evaluation, base_dir: Path) -> bool:
        """Whether the evaluation may run (its code allowed, or it has none); asks the first time."""
        uses = code_uses(evaluation.cases, base_dir, evaluation.variants, evaluation.nunjucks_filters)
        if not uses or self._allowed is evaluation:
            return True
        answer = QMessageBox.question(self.parent, "Run this evaluation's code?", self.question(uses),
                                      QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer != QMessageBox.Yes:
            return False
        self._allowed = evaluation
        return True

    def allowed(self, evaluation: Evaluation) -> bool:
        return self._allowed is evaluation
