"""promptfoo's `max-score` assertion (src/matchers/comparison.ts selectMaxScore and the evaluator's
mergeMaxScoreGradingResult, 0.123.1): once every cell of a row is final (and its select-best, if any, is
applied), the output whose other assertions scored highest wins.

- Each cell's aggregate is the mean (`value.method: sum`: the sum) of its component results' scores, weighted by
  `value.weights[assertion type]` (default 1), leaving out select-best and max-score themselves.
- The first cell with the highest aggregate wins (pass, score 1, "Selected as highest scoring output (score:
  0.833)"), unless `value.threshold` is set and the best is below it; the others fail with score 0 ("Not selected
  (score: 0.500, max: 0.833)", or "Not selected - score … below threshold …" for a best below the threshold).
- The verdict joins the cell's grading as promptfoo merges it: pass = both; a loss makes the cell's score 0 and,
  when the cell had passed, its reason the verdict's; named scores maxScore, assertionCount and totalWeight.
Deliberate difference: promptfoo stops the whole run when a cell of the row has no other graded assertion (an
ERROR cell); Chorus leaves ERROR cells as they are and compares the graded ones.
"""

from __future__ import annotations

from app.evaluate.templates import js_string
from app.session.evaluation import Assertion, Evaluation, GradingResult

TYPE = "max-score"
_LEFT_OUT = ("max-score", "select-best")


def assertion_of(evaluation: Evaluation, case: int) -> Assertion | None:
    return next((a for a in evaluation.cases[case].assertions if a.type == TYPE), None)


def _options(value) -> tuple[str, dict, float | None]:
    value = value if isinstance(value, dict) else {}
    weights = value.get("weights") if isinstance(value.get("weights"), dict) else {}
    return value.get("method", "average"), weights, value.get("threshold")


def _fixed3(x: float) -> str:
    return "-Infinity" if x == float("-inf") else f"{x:.3f}"


def select(gradings: list[GradingResult], assertion: Assertion) -> list[GradingResult]:
    """One verdict per graded cell, in order."""
    method, weights, threshold = _options(assertion.value)
    scores = []
    for grading in gradings:
        relevant = [c for c in grading.component_results if c.assertion and c.assertion.type not in _LEFT_OUT]
        total = weight_sum = 0.0
        for component in relevant:
            weight = weights.get(component.assertion.type, 1.0)
            total += (component.score or 0) * weight
            weight_sum += weight
        aggregate = total if method == "sum" else (total / weight_sum if weight_sum > 0 else 0.0)
        scores.append((aggregate, len(relevant), weight_sum))
    best, winner = float("-inf"), 0
    for i, (score, _n, _w) in enumerate(scores):
        if score > best:
            best, winner = score, i
    meets = threshold is None or best >= threshold
    verdicts = []
    for i, (score, count, weight_sum) in enumerate(scores):
        won = i == winner and meets
        reason = (f"Selected as highest scoring output (score: {_fixed3(score)})" if won else
                  f"Not selected - score {_fixed3(score)} below threshold {js_string(threshold)}"
                  if score == best and not meets else f"Not selected (score: {_fixed3(score)}, max: {_fixed3(best)})")
        verdicts.append(GradingResult(passed=won, score=1.0 if won else 0.0, reason=reason, assertion=assertion,
                                      named_scores={"maxScore": score, "assertionCount": float(count),
                                                    "totalWeight": weight_sum}))
    return verdicts


def merge(grading: GradingResult, verdict: GradingResult) -> GradingResult:
    passed = grading.passed and verdict.passed
    return grading.model_copy(update={
        "passed": passed, "score": grading.score if verdict.passed else verdict.score,
        "reason": verdict.reason if not verdict.passed and grading.passed else grading.reason,
        "component_results": [*grading.component_results, verdict],
        "named_scores": {**grading.named_scores, **verdict.named_scores}})


def _applied(grading: GradingResult | None) -> bool:
    return grading is not None and any(c.assertion is not None and c.assertion.type == TYPE
                                       for c in grading.component_results)


def _select_best_pending(evaluation: Evaluation, case: int, row) -> bool:
    """The row has a select-best whose verdict is not in yet (promptfoo applies it first)."""
    if not any(a.base_type == "select-best" for a in evaluation.cases[case].assertions):
        return False
    return not any(cell.grading and any(c.assertion and c.assertion.base_type == "select-best"
                                        for c in cell.grading.component_results)
                   or cell.status == "error" and (cell.error or "").startswith("select-best") for cell in row)


def apply(evaluation: Evaluation, case: int, repeat: int) -> bool:
    """Grade the row's max-score when its cells are all final (its select-best applied) and it was not graded
    yet; True when it was now."""
    assertion = assertion_of(evaluation, case)
    row = evaluation.row(case, repeat)
    if assertion is None or not all(cell.finished for cell in row) or any(_applied(c.grading) for c in row) or \
            _select_best_pending(evaluation, case, row):
        return False
    graded = [cell for cell in row if cell.grading is not None and cell.status in ("pass", "fail")]
    if not graded:
        return False
    for cell, verdict in zip(graded, select([c.grading for c in graded], assertion), strict=True):
        cell.grading = merge(cell.grading, verdict)
        cell.status = "pass" if cell.grading.passed else "fail"
    return True
