"""Numbers over an evaluation: per-variant column statistics, the matrix a view shows, filters, exit code.

Pass rates carry a 95 % Wilson score interval (exact for small n, never outside [0, 1]). ERROR cells count
against the pass rate, as in promptfoo; cells not run yet are left out of a column's figures. A verdict that rests
on an unreliable judge (app/evaluate/calibration.py) is neither a pass nor a fail here: it is counted as
`unreliable`, and counts against the pass rate (it is not a pass), so the exit code cannot be 0 while one stands.
Named metrics are the mean over a column's cells of each cell's named score. Everything here is Qt-free and cheap
enough to recompute on every streamed step.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from statistics import fmean

from app.evaluate import derived_metrics
from app.evaluate.calibration import Reliability, describe
from app.session.evaluation import CellResult, Evaluation, JudgeCalibration, Variant

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
    unreliable: int = 0  # finished, but the verdict rests on an unreliable judge (not in passed or failed)
    pending: int = 0
    judges: list[JudgeCalibration] = field(default_factory=list)  # the column's judges' calibrations
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
        return self.passed + self.failed + self.errors + self.unreliable

    def summary(self) -> str:
        """One line for a header: pass rate [CI] · unreliable · score · TTFT · tok/s · tokens · judges."""
        if not self.finished:
            return f"{self.pending} to run"
        parts = [f"{self.passed}/{self.finished} pass ({self.pass_rate:.0%}, 95% CI {self.ci[0]:.0%}–{self.ci[1]:.0%})"]
        if self.unreliable:
            parts.append(f"{self.unreliable} unreliable")
        if self.mean_score is not None:
            parts.append(f"score {self.mean_score:.2f}")
        parts += [f"{name} {value:.2f}" for name, value in sorted(self.named_scores.items())]
        if self.mean_ttft_s is not None:
            parts.append(f"TTFT {self.mean_ttft_s:.2f} s")
        if self.mean_decode_tps is not None:
            parts.append(f"{self.mean_decode_tps:.1f} tok/s")
        parts.append(f"{self.generated_tokens} tok")
        return " · ".join(parts + [describe(found) for found in self.judges])


def column_stats(cells: list[CellResult], reliability: Reliability | None = None, derived=()) -> ColumnStats:
    """A column's figures; `derived`: the evaluation's derived metrics, shown beside the named scores' means and
    computed on their sums (derived_metrics.py), as promptfoo shows them."""
    stats = ColumnStats()
    done = [c for c in cells if c.finished]
    doubtful = {id(c) for c in done if reliability is not None and reliability.unreliable(c)}
    stats.pending = len(cells) - len(done)
    stats.unreliable = len(doubtful)
    stats.passed = sum(c.status == "pass" and id(c) not in doubtful for c in done)
    stats.failed = sum(c.status == "fail" and id(c) not in doubtful for c in done)
    stats.errors = sum(c.status == "error" for c in done)
    stats.judges = reliability.for_cells(cells) if reliability is not None else []
    if done:
        stats.pass_rate = stats.passed / len(done)
        stats.ci = wilson_interval(stats.passed, len(done))
        stats.mean_score = fmean(c.score for c in done)
    names = sorted({n for c in done if c.grading for n in c.grading.named_scores})
    stats.named_scores = {n: fmean(c.grading.named_scores[n] for c in done
                                   if c.grading and n in c.grading.named_scores) for n in names}
    if derived:
        sums = {n: math.fsum(c.grading.named_scores[n] for c in done if c.grading and n in c.grading.named_scores)
                for n in names}
        found = derived_metrics.apply(derived, sums)
        stats.named_scores.update({m.name: found[m.name] for m in derived})
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


def failing(row: Row, reliability: Reliability | None = None) -> bool:
    """The row has an errored cell, or a failed one whose verdict counts (not an unreliable judge's)."""
    return any(cell.status == "error" or cell.status == "fail" and not (
        reliability is not None and reliability.unreliable(cell)) for cell in row.cells)


def disagreeing(row: Row, reliability: Reliability | None = None) -> bool:
    """The row's finished variants do not all reach the same verdict (an error is not a pass); a verdict by an
    unreliable judge is neither, so it agrees or disagrees with nothing."""
    verdicts = {cell.status == "pass" for cell in row.cells if cell.finished and not (
        reliability is not None and reliability.unreliable(cell))}
    return len(verdicts) > 1


def matrix(evaluation: Evaluation, only: str | None = None) -> Matrix:
    """Columns with header stats and rows; `only` = "failures" or "disagreements" filters the rows (the
    column stats always cover every row)."""
    reliability = Reliability(evaluation)
    keep = {None: lambda row: True, "failures": lambda row: failing(row, reliability),
            "disagreements": lambda row: disagreeing(row, reliability)}[only]
    columns = [Column(i, v, column_stats([c for c in evaluation.cells if c.variant == i], reliability,
                                         evaluation.derived_metrics))
               for i, v in enumerate(evaluation.variants)]
    return Matrix(columns=columns, rows=[row for row in rows(evaluation) if keep(row)])


@dataclass(frozen=True)
class Totals:
    successes: int
    failures: int
    errors: int
    pending: int
    unreliable: int = 0  # verdicts resting on an unreliable judge: neither successes nor failures
    judges: tuple[JudgeCalibration, ...] = ()  # the unreliable judges' calibrations

    @property
    def pass_rate(self) -> float:
        """Percent of cells that passed (reliably); unfinished cells count as errors."""
        total = self.successes + self.failures + self.errors + self.pending + self.unreliable
        return 100.0 * self.successes / total if total else 100.0


def totals(evaluation: Evaluation) -> Totals:
    reliability = Reliability(evaluation)
    judges: dict[tuple[str, str], JudgeCalibration] = {}
    counts = {"pass": 0, "fail": 0, "error": 0, "unreliable": 0}
    for cell in evaluation.cells:
        doubtful = reliability.doubtful(cell)
        for found in doubtful:
            judges.setdefault((found.judge, found.format), found)
        if cell.finished:
            counts["unreliable" if doubtful else cell.status] += 1
    return Totals(successes=counts["pass"], failures=counts["fail"], errors=counts["error"],
                  pending=sum(not c.finished for c in evaluation.cells), unreliable=counts["unreliable"],
                  judges=tuple(judges.values()))


def pass_rate_threshold() -> float:
    """$PROMPTFOO_PASS_RATE_THRESHOLD (percent), else 100."""
    try:
        return float(os.environ.get("PROMPTFOO_PASS_RATE_THRESHOLD", "100"))
    except ValueError:
        return 100.0


def exit_code(evaluation: Evaluation) -> int:
    """0 when the pass rate reaches $PROMPTFOO_PASS_RATE_THRESHOLD (percent, default 100), else 100."""
    return 0 if totals(evaluation).pass_rate >= pass_rate_threshold() else FAILED_EXIT_CODE


def exit_explanation(evaluation: Evaluation) -> str:
    """Why `exit_code` is what it is, in one or two sentences (unreliable judges named with their score)."""
    total, threshold = totals(evaluation), pass_rate_threshold()
    code = 0 if total.pass_rate >= threshold else FAILED_EXIT_CODE
    text = (f"exit {code}: pass rate {total.pass_rate:.1f}% {'≥' if code == 0 else '<'} the {threshold:g}% "
            "required ($PROMPTFOO_PASS_RATE_THRESHOLD)")
    if total.unreliable:
        one = total.unreliable == 1
        text += (f"; {total.unreliable} verdict{'' if one else 's'} by an unreliable judge "
                 f"{'is' if one else 'are'} not counted as {'a pass' if one else 'passes'} ("
                 + "; ".join(describe(j) for j in total.judges) + ")")
    return text + "."
