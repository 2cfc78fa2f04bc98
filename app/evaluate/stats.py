"""Numbers over an evaluation: per-variant column statistics, the matrix a view shows, filters, exit code.

Pass rates carry a 95 % Wilson score interval (exact for small n, never outside [0, 1]). ERROR cells count
against the pass rate, as in promptfoo; cells not run yet are left out of a column's figures. Named metrics
are the mean over a column's cells of each cell's named score. Everything here is Qt-free and cheap enough to
recompute on every streamed step.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from statistics import fmean

from app.session.evaluation import CellResult, Evaluation, Variant

Z_95 = 1.959963984540054  # two-sided 95 % normal quantile
FAILED_EXIT_CODE = 100  # promptfoo's PROMPTFOO_FAILED_TEST_EXIT_CODE default
UNUSABLE_EXIT_CODE = 2


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval for a proportion; None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return fmean(values) if values else None


@dataclass
class ColumnStats:
    """One variant's header figures."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    pending: int = 0
    pass_rate: float | None = None
    ci: tuple[float, float] | None = None
    mean_score: float | None = None
    named_scores: dict[str, float] = field(default_factory=dict)
    mean_ttft_s: float | None = None
    mean_decode_tps: float | None = None
    mean_latency_ms: float | None = None
    prompt_tokens: int = 0
    generated_tokens: int = 0  # every run's, those a crash or a Stop cut short included
    cached_tokens: int = 0

    @property
    def finished(self) -> int:
        return self.passed + self.failed + self.errors

    def summary(self) -> str:
        """One line for a header: pass rate [CI] · score · TTFT · tok/s · tokens."""
        if not self.finished:
            return f"{self.pending} to run"
        parts = [f"{self.passed}/{self.finished} pass ({self.pass_rate:.0%}, 95% CI {self.ci[0]:.0%}–{self.ci[1]:.0%})"]
        if self.mean_score is not None:
            parts.append(f"score {self.mean_score:.2f}")
        parts += [f"{name} {value:.2f}" for name, value in sorted(self.named_scores.items())]
        if self.mean_ttft_s is not None:
            parts.append(f"TTFT {self.mean_ttft_s:.2f} s")
        if self.mean_decode_tps is not None:
            parts.append(f"{self.mean_decode_tps:.1f} tok/s")
        parts.append(f"{self.generated_tokens} tok")
        return " · ".join(parts)


def column_stats(cells: list[CellResult]) -> ColumnStats:
    stats = ColumnStats()
    done = [c for c in cells if c.finished]
    stats.pending = len(cells) - len(done)
    stats.passed = sum(c.status == "pass" for c in done)
    stats.failed = sum(c.status == "fail" for c in done)
    stats.errors = sum(c.status == "error" for c in done)
    if done:
        stats.pass_rate = stats.passed / len(done)
        stats.ci = wilson_interval(stats.passed, len(done))
        stats.mean_score = fmean(c.score for c in done)
    names = sorted({n for c in done if c.grading for n in c.grading.named_scores})
    stats.named_scores = {n: fmean(c.grading.named_scores[n] for c in done
                                   if c.grading and n in c.grading.named_scores) for n in names}
    generated = [c for c in done if c.latency_ms is not None]
    stats.mean_ttft_s = _mean(c.ttft_s for c in generated)
    stats.mean_decode_tps = _mean(c.decode_tps for c in generated)
    stats.mean_latency_ms = _mean(c.latency_ms for c in generated)
    stats.prompt_tokens = sum(c.prompt_tokens for c in cells)
    stats.generated_tokens = sum(c.generated_tokens + c.cut_short_tokens for c in cells)  # resumes add, never drop
    stats.cached_tokens = sum(c.cached_tokens for c in cells)
    return stats


@dataclass
class Column:
    index: int
    variant: Variant
    stats: ColumnStats


@dataclass
class Row:
    case: int
    repeat: int
    description: str
    vars: dict
    cells: list[CellResult]


@dataclass
class Matrix:
    """What an evaluation view shows: one row per test case (and repeat), one column per variant."""

    columns: list[Column]
    rows: list[Row]


def rows(evaluation: Evaluation) -> list[Row]:
    return [Row(case=c, repeat=r, description=evaluation.cases[c].description, vars=evaluation.cases[c].vars,
                cells=evaluation.row(c, r)) for r in range(evaluation.repeat) for c in range(len(evaluation.cases))]


def failing(row: Row) -> bool:
    """The row has a failed or errored cell."""
    return any(cell.status in ("fail", "error") for cell in row.cells)


def disagreeing(row: Row) -> bool:
    """The row's finished variants do not all reach the same verdict (an error is not a pass)."""
    verdicts = {cell.status == "pass" for cell in row.cells if cell.finished}
    return len(verdicts) > 1


def matrix(evaluation: Evaluation, only: str | None = None) -> Matrix:
    """Columns with header stats and rows; `only` = "failures" or "disagreements" filters the rows (the
    column stats always cover every row)."""
    keep = {None: lambda row: True, "failures": failing, "disagreements": disagreeing}[only]
    columns = [Column(i, v, column_stats([c for c in evaluation.cells if c.variant == i]))
               for i, v in enumerate(evaluation.variants)]
    return Matrix(columns=columns, rows=[row for row in rows(evaluation) if keep(row)])


@dataclass(frozen=True)
class Totals:
    successes: int
    failures: int
    errors: int
    pending: int

    @property
    def pass_rate(self) -> float:
        """Percent of cells that passed; unfinished cells count as errors."""
        total = self.successes + self.failures + self.errors + self.pending
        return 100.0 * self.successes / total if total else 100.0


def totals(evaluation: Evaluation) -> Totals:
    statuses = [c.status for c in evaluation.cells]
    return Totals(successes=statuses.count("pass"), failures=statuses.count("fail"), errors=statuses.count("error"),
                  pending=sum(not c.finished for c in evaluation.cells))


def exit_code(evaluation: Evaluation) -> int:
    """0 when the pass rate reaches $PROMPTFOO_PASS_RATE_THRESHOLD (percent, default 100), else 100."""
    try:
        threshold = float(os.environ.get("PROMPTFOO_PASS_RATE_THRESHOLD", "100"))
    except ValueError:
        threshold = 100.0
    return 0 if totals(evaluation).pass_rate >= threshold else FAILED_EXIT_CODE
