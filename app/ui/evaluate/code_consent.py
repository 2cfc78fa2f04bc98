"""Before an evaluation whose config runs code (javascript / python / ruby checks, transforms, custom providers) runs,
the window's consent bar names every file and inline check that would run (app/evaluate/code_checks.code_uses)
and waits; nothing runs code until the user agrees (*Run it*), and then the evaluation runs. Web hooks on other
computers (which send outputs, prompts and vars there: app/evaluate/webhook.remote) are named and asked about the
same way, in the same question. What was agreed is kept in the window's ConsentLedger (app/session/consent.py)
as the lines shown: the same lines are not asked about again while the window is open, a new one is. *Not now*
runs nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.evaluate import webhook
from app.evaluate.code_checks import code_uses
from app.session.consent import CODE, WEB, Ask, ConsentLedger
from app.session.evaluation import Evaluation
from app.ui.widgets.consent_bar import ConsentBar

CODE_HEADLINE = ("This evaluation runs code from its config, on this computer, with your permissions. Run it only "
                 "if you trust where the config came from:")
HOOKS_HEADLINE = ("This evaluation's config sends each output, its prompt and its vars to web hooks on other "
                  "computers. Send them only if you trust those addresses:")
HOOKS_TOO = "It also sends each output, its prompt and its vars to these web hooks:"


class CodeConsent:
    def __init__(self, bar: ConsentBar, consent: ConsentLedger):
        self.bar, self.consent = bar, consent

    def allows(self, evaluation: Evaluation, base_dir: Path, then: Callable[[], object]) -> bool:
        """Whether the evaluation may run now (its code and its web hooks agreed to, or it has none). If not,
        the bar asks, and `then()` is called once the user agrees."""
        uses = code_uses(evaluation.cases, base_dir, evaluation.variants, evaluation.nunjucks_filters)
        hooks = webhook.remote(evaluation.cases)
        if not self.consent.missing(CODE, uses) and not self.consent.missing(WEB, hooks):
            return True

        def agreed() -> None:
            self.consent.agree(CODE, uses)
            self.consent.agree(WEB, hooks)
            then()
        lines = [f"• {line}" for line in uses]
        if hooks and uses:
            lines.append(HOOKS_TOO)
        lines += [f"• {hook}" for hook in hooks]
        self.bar.ask(Ask(CODE, CODE_HEADLINE if uses else HOOKS_HEADLINE, tuple(lines),
                         "Run it" if uses else "Send them", on_agree=agreed))
        return False
