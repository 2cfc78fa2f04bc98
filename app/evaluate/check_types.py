"""What every deterministic check shares: the output it sees, its verdict, and the error that makes a cell an
ERROR (checks.py and tool_checks.py both use them; checks.py re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass

from app.session.evaluation import Assertion, GradingResult


class CheckError(ValueError):
    """The assertion could not be evaluated: the cell is an ERROR with this message."""


@dataclass(frozen=True)
class Output:
    """What a check sees of a cell. latency_ms is None for an output not generated now (cached or given)."""

    text: str
    latency_ms: float | None = None
    finish_reason: str | None = None
    logprobs: list[float] | None = None
    tool_calls: tuple[dict, ...] = ()  # the reply's calls ({id, name, arguments}), when the backend parsed them
    tools: tuple[dict, ...] = ()  # the provider's config.tools
    raw: object = None  # what a transform returned, when not text (`text` is then its JSON)
    cost: float | None = None  # dollars, from the provider's configured prices (cost.py); None: no cost
    functions: tuple[dict, ...] = ()  # the provider's legacy config.functions (functions_call.py)

    @property
    def value(self):
        """The output as code sees it: a transform's object, else the text."""
        return self.text if self.raw is None else self.raw


def verdict(passed: bool, reason: str, assertion: Assertion, score: float | None = None) -> GradingResult:
    return GradingResult(passed=passed, score=(1.0 if passed else 0.0) if score is None else score,
                         reason="Assertion passed" if passed else reason, assertion=assertion)
