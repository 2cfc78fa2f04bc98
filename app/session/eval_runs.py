"""An evaluation's earlier runs: a rerun never overwrites one. Before the cells start again (`start_again`),
the run they hold is kept (`snapshot`) in `Evaluation.runs`: its matrix (the cases and variants as they were,
as plain promptfoo-keyed data, so a later edit of the config changes nothing kept), each cell's verdict and
output, the judge, and when and how long it ran. A kept run is never changed; the list is replaced, never
mutated. Qt-free, and below evaluation.py (it reads an evaluation by its fields, imports none of it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.session.result import PaneResult


@dataclass(frozen=True)
class RunCell:
    """One cell of a kept run: where it sat in the matrix, its verdict ("pass", "fail", "error" or "pending"
    for a cell that never finished), its output and score, and why it failed."""

    case: int
    variant: int
    repeat: int = 0
    status: str = "pending"
    output: str = ""
    score: float = 0.0
    reason: str = ""
    unreliable: bool = False  # its verdict rests on a judge that failed its calibration


@dataclass(eq=False)
class EvalRun:
    """A finished (or stopped) run of an evaluation, as it was. Compared by identity."""

    started_at: str | None = None
    duration_s: float | None = None
    judge: str = ""
    cases: list[dict[str, Any]] = field(default_factory=list)  # EvalCase as promptfoo writes it
    variants: list[dict[str, Any]] = field(default_factory=list)  # Variant (provider, prompt, settings)
    cells: list[RunCell] = field(default_factory=list)

    def variant_title(self, index: int) -> str:
        """promptfoo's column header `[provider] prompt label` (the Variant's `title`)."""
        variant = self.variants[index]
        return f"[{variant.get('label', '')}] {(variant.get('prompt') or {}).get('label', '')}"

    def case_key(self, index: int) -> str:
        """What pairs a case across runs: its vars and description (run_compare's key)."""
        case = self.cases[index]
        return json.dumps([case.get("vars", {}), case.get("description") or None], sort_keys=True, default=str)

    def pass_rate(self) -> tuple[int, int]:
        """(passed, finished) over its cells."""
        done = [c for c in self.cells if c.status in ("pass", "fail", "error")]
        return sum(c.status == "pass" for c in done), len(done)


def snapshot(evaluation, unreliable: Callable[[Any], bool] = lambda cell: False) -> EvalRun:
    """The run `evaluation`'s cells hold now, kept apart from them."""
    def reason(cell) -> str:
        return cell.error or (cell.grading.reason if cell.grading is not None else "") or ""

    return EvalRun(
        started_at=evaluation.started_at, duration_s=evaluation.duration_s, judge=evaluation.judge,
        cases=[c.model_dump(by_alias=True, mode="json") for c in evaluation.cases],
        variants=[v.model_dump(by_alias=True, mode="json") for v in evaluation.variants],
        cells=[RunCell(c.case, c.variant, c.repeat, c.status if c.finished else "pending", c.output, c.score,
                       reason(c), bool(unreliable(c))) for c in evaluation.cells])


def start_again(evaluation, unreliable: Callable[[Any], bool] = lambda cell: False) -> EvalRun:
    """Keep the current run in `evaluation.runs`, then make every cell pending with a fresh result, so the
    next run (EvaluationRunner.start) runs them all. Returns the kept run."""
    kept = snapshot(evaluation, unreliable)
    evaluation.runs = [*evaluation.runs, kept]
    for cell in evaluation.cells:
        cell.grading, cell.error, cell.latency_ms, cell.cached, cell.cut_short_tokens = None, None, None, False, 0
        cell.result = PaneResult()
        cell.status = "pending"
    evaluation.started_at, evaluation.duration_s = None, None
    return kept


def carry_over(old, new) -> None:
    """`new` replaces `old` from the same config (opened again): the old one's runs, and the run it holds if
    any cell of it finished, become `new`'s earlier runs."""
    if old is None or new is None or old is new or not old.source or old.source != new.source:
        return
    earlier = list(old.runs)
    if any(cell.finished for cell in old.cells):
        earlier.append(snapshot(old))
    new.runs = [*earlier, *new.runs]
