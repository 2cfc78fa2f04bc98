"""The table outputs: CSV as promptfoo writes it, one self-contained HTML report, JUnit XML for CI.

CSV (promptfoo src/util/eval/evalTableUtils.ts): `Description` (when any case has one), one column per var, then per
variant `[provider] prompt label`, `Status` (PASS/FAIL/ERROR; UNRELIABLE for a verdict resting on an unreliable
judge, which the totals count as neither), `Score` (2 decimals), `Named Scores` (JSON), `Metric: <name>` (one per
named score of that variant), `Grader Reason`, `Comment`; string cells that a spreadsheet would run as a formula get
a leading "'". HTML: one file, inline CSS, no scripts or links out. JUnit: one <testsuite> per variant, one
<testcase> per cell; FAIL is <failure>, ERROR is <error>, a verdict resting on an unreliable judge is <skipped> (not
counted either way). HTML shows such a verdict as "UNRELIABLE JUDGE" (neither PASS nor FAIL) and gives the judges'
calibration under the summary, and, when earlier runs are kept, this run compared with the one before
(app/evaluate/run_history.py: flips, pass-rate changes, McNemar).
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import xml.etree.ElementTree as ET

from app.evaluate import run_history, stats
from app.evaluate.calibration import Reliability, describe
from app.evaluate.templates import js_fixed
from app.session.evaluation import CellResult, Evaluation

_FORMULA = re.compile(r"^[=+\-@\t\r]")
_NUMERIC = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def escape_formula(cell: str) -> str:
    """Prefix "'" to a cell a spreadsheet would evaluate (=, +, -, @, tab, CR), numbers excepted."""
    if _FORMULA.match(cell) and not _NUMERIC.match(cell.strip()):
        return "'" + cell
    return cell


def status_word(cell: CellResult, reliability: Reliability | None = None) -> str:
    """PASS / FAIL / ERROR, or UNRELIABLE for a verdict resting on an unreliable judge (the totals count it as
    neither a pass nor a fail)."""
    if reliability is not None and reliability.unreliable(cell):
        return "UNRELIABLE"
    return {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}.get(cell.status, "")


def _var_names(evaluation: Evaluation) -> list[str]:
    return list(dict.fromkeys(name for case in evaluation.cases for name in case.vars))


def _metric_names(evaluation: Evaluation, variant: int) -> list[str]:
    return sorted({name for c in evaluation.cells if c.variant == variant and c.grading
                   for name in c.grading.named_scores})


def to_csv(evaluation: Evaluation) -> str:
    names = _var_names(evaluation)
    has_descriptions = any(case.description for case in evaluation.cases)
    metrics = [_metric_names(evaluation, i) for i in range(len(evaluation.variants))]
    reliability = Reliability(evaluation)
    header = (["Description"] if has_descriptions else []) + names
    for i, variant in enumerate(evaluation.variants):
        header += [variant.title, "Status", "Score", "Named Scores", *(f"Metric: {m}" for m in metrics[i]),
                   "Grader Reason", "Comment"]
    lines = [header]
    for row in stats.rows(evaluation):
        values = ([row.description] if has_descriptions else []) + [
            "" if row.vars.get(n) is None else str(row.vars[n]) for n in names]
        for i, cell in enumerate(row.cells):
            if not cell.finished:
                values += [""] * (6 + len(metrics[i]))
                continue
            named = cell.grading.named_scores if cell.grading else {}
            values += [cell.output if cell.status != "error" else (cell.error or cell.output),
                       status_word(cell, reliability),
                       js_fixed(cell.score), json.dumps({k: float(js_fixed(v)) for k, v in named.items()}) if named
                       else "", *(js_fixed(named[m]) if m in named else "" for m in metrics[i]),
                       cell.grading.reason if cell.grading else (cell.error or ""), ""]
        lines.append(values)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[escape_formula(v) for v in line] for line in lines])
    return out.getvalue()


_CSS = """body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;width:100%}
th,td{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}th{background:#f4f4f4}
.PASS{color:#176f2c}.FAIL{color:#b3261e}.ERROR{color:#8a4b00}.UNRELIABLE{color:#6d4c41}.out{white-space:pre-wrap;font-family:monospace}
.reason{color:#555;font-size:90%;white-space:pre-wrap}.thumb{max-width:96px;max-height:96px}.stats{font-weight:normal;font-size:85%;color:#444}"""


def _var_cell(value) -> str:
    """A var's cell: an image var (a data URL, as a `file://` image var loads) as its thumbnail, else its text."""
    if isinstance(value, str) and value.startswith("data:image/"):
        return f"<td><img class='thumb' alt='image' src='{html.escape(value, quote=True)}'></td>"
    return f"<td class='out'>{html.escape(str(value))}</td>"


def to_html(evaluation: Evaluation) -> str:
    """One self-contained page: summary, then the matrix ([STATUS] (score) output, then the reason)."""
    esc = html.escape
    matrix = stats.matrix(evaluation)
    total, reliability = stats.totals(evaluation), Reliability(evaluation)
    names = _var_names(evaluation)
    head = "".join(f"<th>{esc(n)}</th>" for n in ["Description", *names])
    head += "".join(f"<th>{esc(c.variant.title)}<div class='stats'>{esc(c.stats.summary())}</div></th>"
                    for c in matrix.columns)
    body = []
    for row in matrix.rows:
        cells = [f"<td>{esc(row.description)}</td>"] + [_var_cell(row.vars.get(n, "")) for n in names]
        for cell in row.cells:
            word = status_word(cell, reliability) or "PENDING"
            word = "UNRELIABLE JUDGE" if word == "UNRELIABLE" else word
            text = cell.error if cell.status == "error" else cell.output
            reason = cell.grading.reason if cell.grading else ""
            cells.append(f"<td><b class='{word.split()[0]}'>[{word}]</b> ({cell.score:.2f}) "
                         f"<div class='out'>{esc(text or '')}"
                         f"</div><div class='reason'>{esc(reason)}</div></td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    title = esc(evaluation.description or evaluation.source or "Evaluation")
    summary = (f"{total.successes} passed, {total.failures} failed, {total.errors} errors"
               + (f", {total.unreliable} unreliable" if total.unreliable else "")
               + (f", {total.pending} not run" if total.pending else "") + f" · pass rate {total.pass_rate:.1f}%"
               + "".join(f"\n{describe(found)}" for found in evaluation.calibrations))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>{_CSS}</style></head>"
            f"<body><h1>{title}</h1><p class='reason'>{esc(summary)}</p><table><thead><tr>{head}</tr></thead><tbody>"
            + "\n".join(body) + "</tbody></table>" + _runs_html(evaluation) + "</body></html>\n")


def _runs_html(evaluation: Evaluation) -> str:
    """With earlier runs kept: this run against the one before (flips and each variant's change)."""
    if not evaluation.runs:
        return ""
    last = len(evaluation.runs)
    lines = run_history.summary_lines(run_history.compare_runs(evaluation, last - 1, last))
    head = f"Compared with the previous run ({run_history.run_name(evaluation, last - 1)})"
    return f"<h2>{html.escape(head)}</h2><pre class='out'>{html.escape(chr(10).join(lines))}</pre>"


def to_junit(evaluation: Evaluation) -> str:
    """JUnit XML: <testsuites> with one <testsuite> per variant (its cells as <testcase>s)."""
    total, reliability = stats.totals(evaluation), Reliability(evaluation)
    suites = ET.Element("testsuites", name=evaluation.description or "chorus eval",
                        tests=str(len(evaluation.cells)), failures=str(total.failures),
                        errors=str(total.errors + total.pending), time=f"{evaluation.duration_s or 0:.3f}")
    for index, variant in enumerate(evaluation.variants):
        cells = [c for c in evaluation.cells if c.variant == index]
        doubtful = {id(c): reliability.doubtful(c) for c in cells}
        suite = ET.SubElement(suites, "testsuite", name=variant.title, tests=str(len(cells)),
                              failures=str(sum(c.status == "fail" and not doubtful[id(c)] for c in cells)),
                              errors=str(sum(c.status not in ("pass", "fail") for c in cells)),
                              skipped=str(sum(bool(d) for d in doubtful.values())),
                              time=f"{sum(c.latency_ms or 0 for c in cells) / 1000:.3f}")
        for cell in cells:
            case = evaluation.cases[cell.case]
            name = case.description or json.dumps(case.vars, ensure_ascii=False)[:200]
            if evaluation.repeat > 1:
                name += f" (repeat {cell.repeat + 1})"
            testcase = ET.SubElement(suite, "testcase", name=name, classname=variant.title,
                                     time=f"{(cell.latency_ms or 0) / 1000:.3f}")
            if doubtful[id(cell)]:  # the judge's verdict, not counted: its judge failed the calibration
                ET.SubElement(testcase, "skipped", message=f"{cell.status} by an unreliable judge: " + "; ".join(
                    describe(found) for found in doubtful[id(cell)]))
            elif cell.status == "fail":
                reason = cell.grading.reason if cell.grading else ""
                ET.SubElement(testcase, "failure", message=reason[:500], type="assertion").text = cell.output
            elif cell.status != "pass":
                ET.SubElement(testcase, "error", message=(cell.error or "not run")[:500],
                              type="error" if cell.finished else "not-run").text = cell.error or ""
            ET.SubElement(testcase, "system-out").text = cell.output
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
