"""What `python -m app eval` prints on stdout: the summary table (each variant's pass / fail / error counts, pass
rate and its judges' calibration, then the totals and why the exit code is what it is) and, with --repeat N, the
stability report (each cell's repeats clustered by meaning). A variant is named as promptfoo names a column.
"""

from __future__ import annotations

import shutil
import textwrap

from app.evaluate import Evaluation, stats
from app.evaluate.calibration import describe, reliable
from app.session.stability import cell_repeats, stability

NO_TERMINAL_WIDTH = 10_000  # the summary's width when stdout is a pipe or a file: names are not cut


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def variant_name(variant) -> str:
    """A variant as promptfoo names a column, `[provider label or id] prompt label`, on one line: a literal
    prompt (labelled with its own text) shows its first words, a prompt from a file its file name."""
    label, raw = variant.prompt.label, variant.prompt.raw
    if label == raw:
        words = raw.split()
        label = " ".join(words[:8]) + (" …" if len(words) > 8 else "")
    elif raw and label.endswith(f": {raw}"):  # "file.txt: <its text>"
        label = label[: -len(raw) - 2]
    return " ".join(f"[{variant.label}] {label}".split())


def stability_report(evaluation: Evaluation, embed, embedder_name: str, width: int = 60) -> str:
    """With --repeat N: each case × variant's answers clustered by meaning (app/session/stability.py): the
    largest cluster's share, then each cluster's size and representative answer; "" when nothing repeats."""
    groups = cell_repeats(evaluation)
    if not groups:
        return ""
    lines = [f"Stability: the repeats of each cell clustered by meaning (embedder {embedder_name})"]
    for (case, variant), texts in groups.items():
        found = stability(texts, embed)
        name = evaluation.cases[case].description or f"case {case + 1}"
        clusters = " · ".join(f'{size}× "{text}"' for size, _share, text in found.summary(texts, width))
        lines.append(f"  {variant_name(evaluation.variants[variant])} / {name}: largest cluster "
                     f"{found.clusters[0].size}/{found.n} ({found.top_share:.0%}), "
                     f"{plural(len(found.clusters), 'cluster')}: {clusters}")
    return "\n".join(lines)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(1, width - 1)] + "…"


def _judge_cell(judges) -> str:
    """A variant's judges in the table: "4/10 unreliable", "9/10", "calibrating"; "–" when none judged it."""
    if not judges:
        return "–"
    return ", ".join("calibrating" if not j.done else f"{j.correct}/{j.total}" + ("" if reliable(j) else
                     " unreliable") for j in judges)


def summary(evaluation: Evaluation, width: int | None = None) -> str:
    """A table of each variant's pass / fail / error (and unreliable) counts, pass rate and its judges'
    calibration scores, then the totals, each judge's calibration and why the exit code is what it is. Variant
    names are cut so each line fits `width` columns (default: the terminal's, or $COLUMNS, by
    shutil.get_terminal_size; not cut when stdout is no terminal and $COLUMNS is unset)."""
    width = width or shutil.get_terminal_size((NO_TERMINAL_WIDTH, 24)).columns
    columns = stats.matrix(evaluation).columns
    judged = any(column.stats.judges for column in columns)
    doubtful = any(column.stats.unreliable for column in columns)
    head = ("Variant", "Pass", "Fail", "Error") + ("Unreliable",) * doubtful + ("Not run", "Pass rate (95% CI)") + (
        ("Judge (calibration)",) * judged)
    rows = []
    for column in columns:
        s = column.stats
        rate = f"{s.pass_rate:.0%} ({s.ci[0]:.0%}–{s.ci[1]:.0%})" if s.pass_rate is not None else "–"
        rows.append((variant_name(column.variant), str(s.passed), str(s.failed), str(s.errors))
                    + (str(s.unreliable),) * doubtful + (str(s.pending), rate) + (_judge_cell(s.judges),) * judged)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    widths[0] = max(len(head[0]), min(widths[0], width - sum(widths[1:]) - 2 * (len(head) - 1)))
    rows = [(_cut(r[0], widths[0]), *r[1:]) for r in rows]
    line = "  ".join
    text = [line(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
            for r in [head, *rows]]
    text.insert(1, line("-" * w for w in widths))
    total = stats.totals(evaluation)
    text.append(f"\n{total.successes} passed, {total.failures} failed, {total.errors} errors"
                + (f", {total.unreliable} unreliable" if total.unreliable else "")
                + (f", {total.pending} not run" if total.pending else "") + f" · pass rate {total.pass_rate:.1f}%")
    notes = [describe(found) for found in evaluation.calibrations] + [stats.exit_explanation(evaluation)]
    text += [textwrap.fill(note, width, subsequent_indent="  ") for note in notes]  # wrapped to the terminal
    return "\n".join(text)
