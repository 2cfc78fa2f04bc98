"""Before an evaluation whose config runs code (javascript / python checks, transforms, custom providers) runs,
the window's consent bar names every file and inline check that would run (app/evaluate/code_checks.code_uses)
and waits; nothing runs code until the user agrees (*Run it*), and then the evaluation runs. What was agreed is
kept in the window's ConsentLedger (app/session/consent.py) as the lines shown: the same lines are not asked about
again while the window is open, a new one is. *Not now* runs nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.evaluate.code_checks import code_uses
from app.session.consent import CODE, Ask, ConsentLedger
from app.session.evaluation import Evaluation
from app.ui.widgets.consent_bar import ConsentBar

HEADLINE = ("This evaluation runs code from its config, on this computer, with your permissions. Run it only if "
            "you trust where the config came from:")


class CodeConsent:
    def __init__(self, bar: ConsentBar, consent: ConsentLedger):
        self.bar, self.consent = bar, consent

    def allows(self, evaluation: Evaluation, base_dir: Path, then: Callable[[], object]) -> bool:
        """Whether the evaluation may run now (its code agreed to, or it has none). If not, the bar asks, and
        `then()` is called once the user agrees."""
        uses = code_uses(evaluation.cases, base_dir, evaluation.variants)
        missing = self.consent.missing(CODE, uses)
        if not missing:
            return True

        def agreed() -> None:
            self.consent.agree(CODE, uses)
            then()
        self.bar.ask(Ask(CODE, HEADLINE, tuple(f"• {line}" for line in uses), "Run it", on_agree=agreed))
        return False

    def allowed(self, evaluation: Evaluation, base_dir: Path) -> bool:
        return not self.consent.missing(CODE, code_uses(evaluation.cases, base_dir, evaluation.variants))
