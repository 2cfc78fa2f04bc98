"""Before the first run of an evaluation whose config runs code (javascript / python checks, transforms), the
window names every file and inline check that would run and asks; nothing runs code until the user agrees. Web
hooks to other computers (which send outputs, prompts and vars there) are named and asked about the same way. The
answer holds for that evaluation while it is the session's; another one (or the same after a restart) asks
again. Declining runs nothing."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget

from app.evaluate import webhook
from app.evaluate.code_checks import code_uses
from app.session.evaluation import Evaluation

SHOWN = 12  # lines listed in the question; the rest are counted


class CodeConsent:
    def __init__(self, parent: QWidget):
        self.parent = parent
        self._allowed: Evaluation | None = None

    def question(self, uses: list[str], hooks: list[str] = ()) -> str:
        def listed(lines: list[str]) -> str:
            more = f"\n…and {len(lines) - SHOWN} more" if len(lines) > SHOWN else ""
            return "\n".join(f"• {line}" for line in lines[:SHOWN]) + more
        sent = (f"It sends each output, its prompt and its vars to these web hooks:\n\n{listed(hooks)}\n\n"
                if hooks else "")
        if not uses:
            return ("This evaluation's config sends each output, its prompt and its vars to web hooks on other "
                    f"computers:\n\n{listed(hooks)}\n\nSend them only if you trust those addresses. Send them?")
        return ("This evaluation runs code from its config, on this computer, with your permissions:\n\n"
                f"{listed(uses)}\n\n{sent}Run it only if you trust where the config came from. Run this code?")

    def allows(self, evaluation: Evaluation, base_dir: Path) -> bool:
        """Whether the evaluation may run (its code allowed, or it has none; likewise its web hooks to other
        computers); asks the first time."""
        uses = code_uses(evaluation.cases, base_dir, evaluation.variants)
        hooks = webhook.remote(evaluation.cases)
        if (not uses and not hooks) or self._allowed is evaluation:
            return True
        title = "Run this evaluation's code?" if uses else "Send outputs to web hooks?"
        answer = QMessageBox.question(self.parent, title, self.question(uses, hooks),
                                      QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer != QMessageBox.Yes:
            return False
        self._allowed = evaluation
        return True

    def allowed(self, evaluation: Evaluation) -> bool:
        return self._allowed is evaluation
