"""An evaluation's runs compared inside Chorus: any two of its runs (the kept ones, `Evaluation.runs`, and the
one its cells hold now) paired cell by cell and tested per variant as `eval-compare` does with two results.json
files (app/evaluate/run_compare.py: the same pairing keys, the same exact McNemar test, the same verdicts).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from app.evaluate.calibration import Reliability
from app.evaluate.run_compare import ALPHA, Cell, Comparison, Run, VariantChange, compare

__all__ = ["as_run", "compare", "compare_runs", "flips", "keep_and_restart", "rate_change", "run_name", "runs",
           "summary_lines", "verdict"]
from app.session import eval_runs
from app.session.eval_runs import EvalRun
from app.session.evaluation import Evaluation

LABEL_CHARS = 60


def keep_and_restart(evaluation: Evaluation) -> EvalRun:
    """Run again: the run the cells hold is kept (with its judges' reliability), and every cell is pending."""
    return eval_runs.start_again(evaluation, Reliability(evaluation).unreliable)


def runs(evaluation: Evaluation) -> list[EvalRun]:
    """Every run, oldest first: the kept ones, then the current one (the cells as they are now)."""
    return [*evaluation.runs, eval_runs.snapshot(evaluation, Reliability(evaluation).unreliable)]


def run_name(evaluation: Evaluation, index: int) -> str:
    """"run 2 of 3 (current)" · its start time when known."""
    count = len(evaluation.runs) + 1
    run = evaluation.runs[index] if index < len(evaluation.runs) else None
    when = (run.started_at if run is not None else evaluation.started_at) or ""
    name = f"run {index + 1} of {count}" + (" (current)" if index == count - 1 else "")
    return name + (f" · {when[:16].replace('T', ' ')}" if when else "")


def _label(run: EvalRun, case: int, occurrence: int) -> str:
    data = run.cases[case]
    text = data.get("description") or ", ".join(f"{k}={v}" for k, v in (data.get("vars") or {}).items()) or (
        f"test {case}")
    text = " ".join(str(text).split())
    text = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    return text + (f" (repeat {occurrence})" if occurrence > 1 else "")


def as_run(run: EvalRun, name: str) -> Run:
    """A kept run in run_compare's terms (only finished cells: a pending one has no verdict to pair)."""
    seen: Counter = Counter()
    cells: dict[tuple[str, str], Cell] = {}
    for cell in sorted(run.cells, key=lambda c: (c.variant, c.repeat, c.case)):
        if cell.status not in ("pass", "fail", "error"):
            continue
        variant, base = run.variant_title(cell.variant), run.case_key(cell.case)
        seen[(variant, base)] += 1
        case = f"{base}#{seen[(variant, base)]}"
        cells[(variant, case)] = Cell(variant, case, cell.status == "pass", cell.reason,
                                      _label(run, cell.case, seen[(variant, base)]), cell.unreliable)
    return Run(Path(name), cells, run.started_at)


def compare_runs(evaluation: Evaluation, old: int, new: int, alpha: float = ALPHA) -> Comparison:
    """Run `old` against run `new` (indexes into `runs(evaluation)`)."""
    every = runs(evaluation)
    return compare(as_run(every[old], run_name(evaluation, old)), as_run(every[new], run_name(evaluation, new)),
                   alpha)


def verdict(change: VariantChange, alpha: float) -> str:
    """"No detectable change" when the test cannot tell, else "Significantly worse/better" (p)."""
    said = change.verdict(alpha)
    return said[:1].upper() + said[1:] + ("" if change.p_value >= alpha else f" (p = {change.p_value:.3g})")


def rate_change(change: VariantChange) -> str:
    """"3/5 60% → 4/5 80% (+20 pts)"."""
    if not change.paired:
        return "–"
    old, new, n = change.old_passed, change.new_passed, change.paired
    return f"{old}/{n} {old / n:.0%} → {new}/{n} {new / n:.0%} ({(new - old) / n * 100:+.0f} pts)"


def flips(comparison: Comparison) -> list[tuple[str, Cell, Cell]]:
    """(variant, old cell, new cell) of every pair that flipped, pass → fail first."""
    return [(v.variant, old, new) for v in comparison.variants for old, new in v.worse + v.better]


def summary_lines(comparison: Comparison) -> list[str]:
    """Per variant: the pass-rate change, the flips and the verdict; then each flipped cell. Markdown-ready."""
    lines = []
    for change in comparison.variants:
        lines.append(f"- {change.variant}: {rate_change(change)}; {len(change.worse)} pass → fail, "
                     f"{len(change.better)} fail → pass; McNemar p = {change.p_value:.3g}: "
                     f"{verdict(change, comparison.alpha)}")
    if not comparison.variants:
        lines.append("- no cell of one run has a partner in the other: nothing to compare")
    for variant, old, new in flips(comparison):
        arrow = "pass → fail" if old.passed else "fail → pass"
        lines.append(f"  - {variant} · {old.label}: {arrow}" + (f" — {new.reason}" if new.reason and not new.passed
                                                                  else ""))
    return lines
