"""`python -m app eval-compare OLD.json NEW.json`: what changed between two runs of an evaluation.

Prints each variant's pass rate before and after, its flips (pass → fail, fail → pass) and the exact McNemar
test's verdict (app/evaluate/run_compare.py), then every flipped cell. Exit codes make it a CI gate: 0 when no
variant got significantly worse, 100 (promptfoo's failed-tests code) when one did, 2 when a file is unusable.
"""

from __future__ import annotations

import sys

from app.evaluate import stats
from app.evaluate.run_compare import Comparison, ResultsFileError, compare, load_run

EXIT_UNUSABLE = 2


def _rate(passed: int, total: int) -> str:
    return f"{passed}/{total} {passed / total:.0%}" if total else "–"


def format_comparison(result: Comparison) -> str:
    """The per-variant table, the unpaired cells, then the flipped cells."""
    head = ("Variant", "Old", "New", "Change", "Pass→fail", "Fail→pass", "McNemar p", "Verdict")
    rows = [head]
    for v in result.variants:
        change = f"{(v.new_passed - v.old_passed) / v.paired * 100:+.0f} pts" if v.paired else "–"
        rows.append((v.variant, _rate(v.old_passed, v.paired), _rate(v.new_passed, v.paired), change,
                     str(len(v.worse)), str(len(v.better)), f"{v.p_value:.3g}",
                     v.verdict(result.alpha)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [f"Old: {result.old.path}" + (f" ({result.old.timestamp})" if result.old.timestamp else ""),
             f"New: {result.new.path}" + (f" ({result.new.timestamp})" if result.new.timestamp else ""), ""]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if not result.variants:
        lines.append("(no cell of the old run has a partner in the new one: nothing to compare)")
    if result.only_old or result.only_new:
        lines.append(f"\nNot compared: {result.only_old} cell(s) only in the old run, {result.only_new} only in the "
                     "new (a case or variant the other lacks).")
    unreliable = sum(v.unreliable for v in result.variants)
    if unreliable:
        lines.append(f"\nNot compared: {unreliable} pair(s) with a verdict by a judge that failed its calibration "
                     "(unreliable, neither a pass nor a fail).")
    flips = [(v.variant, old, new) for v in result.variants for old, new in v.worse + v.better]
    if flips:
        lines.append("\nFlipped cells:")
        for variant, old, new in flips:
            arrow = "pass → fail" if old.passed else "fail → pass"
            why = f" — {new.reason}" if new.reason and not new.passed else ""
            lines.append(f"  {variant} · {old.label}: {arrow}{why}")
    lines.append(f"\nExact McNemar test per variant on the paired cells, two-sided, at p < {result.alpha:g}.")
    return "\n".join(lines)


def eval_compare_command(args) -> int:
    try:
        result = compare(load_run(args.old), load_run(args.new), alpha=args.alpha)
    except ResultsFileError as exc:
        print(f"chorus eval-compare: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(format_comparison(result))
    if result.regressed:
        names = ", ".join(v.variant for v in result.regressed)
        print(f"chorus eval-compare: significantly worse: {names}", file=sys.stderr)
        return stats.FAILED_EXIT_CODE
    return 0
