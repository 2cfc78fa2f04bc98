"""What the evaluation matrix says in words about its cells and columns, Qt-free: a case's label, a variant's
header lines (pass rate with its 95 % interval, scores, speed, its judges' calibration), each assertion's result in
a cell, why the cell has its verdict, and its tooltip. app/ui/evaluate/matrix.py serves them through its roles.
"""

from __future__ import annotations

import re

from app.evaluate import CellResult, Evaluation, stats
from app.evaluate.calibration import Reliability, describe
from app.session.result import RunState

PREVIEW_CHARS = 240


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """The output's beginning on one logical line (whitespace runs collapsed)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def case_label(evaluation: Evaluation, case: int, repeat: int) -> str:
    """"#N", its description (unless it is a CSV row's "Row #N"), then its vars, one a line."""
    test = evaluation.cases[case]
    described = test.description and not re.fullmatch(r"Row #\d+", test.description)
    lines = [f"#{case + 1}" + (f" · repeat {repeat + 1}" if evaluation.repeat > 1 else "")
             + (f" {test.description}" if described else "")]
    lines += [f"{name}: {preview(str(value), 80)}" for name, value in test.vars.items()]
    return "\n".join(lines)


def header_lines(column: stats.Column) -> list[str]:
    """A variant's header: its title, pass rate with the 95 % Wilson interval, scores, speed and tokens."""
    s = column.stats
    title = column.variant.title
    lines = [title if len(title) <= 60 else title[:59] + "…"]
    if not s.finished:  # the tokens generated so far (cut-short runs' too): a resume adds to them
        lines.append(f"{s.pending} to run" + (f" · {s.generated_tokens} tok" if s.generated_tokens else ""))
        return lines
    lines.append(f"{s.passed}/{s.finished} pass · {s.pass_rate:.0%} (95% CI {s.ci[0]:.0%}–{s.ci[1]:.0%})"
                 + (f" · {s.unreliable} unreliable" if s.unreliable else ""))
    scores = [f"score {s.mean_score:.2f}"] + [f"{name} {value:.2f}" for name, value in sorted(s.named_scores.items())]
    lines.append(" · ".join(scores))
    speed = []
    if s.mean_ttft_s is not None:
        speed.append(f"TTFT {s.mean_ttft_s:.2f} s")
    if s.mean_decode_tps is not None:
        speed.append(f"{s.mean_decode_tps:.1f} tok/s")
    speed.append(f"{s.generated_tokens} tok")
    lines.append(" · ".join(speed))
    if s.pending:
        lines.append(f"{s.pending} to run")
    return lines + judge_lines(column)


def judge_lines(column: stats.Column) -> list[str]:
    """The column's judges: "judge: SmolLM2-135M, 4/10 on llm-rubric calibration — verdicts unreliable"."""
    return [describe(found) for found in column.stats.judges]


def checks(cell: CellResult, reliability: Reliability) -> list[tuple[str, bool, bool]]:
    """Every assertion's result in the cell: (type, passed, judged by an unreliable judge)."""
    if cell.grading is None or not cell.finished:
        return []
    doubtful = {(c.judge, c.format) for c in reliability.doubtful(cell)}
    found = []
    for component in cell.grading.component_results or [cell.grading]:
        if component.assertion is not None and component.assertion.base_type == "assert-set":
            continue
        calibration = reliability.of(cell.case, component.assertion)
        kind = component.assertion.type if component.assertion else "result"
        found.append((kind, component.passed, calibration is not None and (calibration.judge,
                                                                             calibration.format) in doubtful))
    return found


def verdict_note(cell: CellResult) -> str:
    """Why the cell has its verdict, in one line: the first failed check's reason (a fail), else the judge's
    (a pass graded by a model); "" when there is nothing to add."""
    if cell.status == "error":
        return cell.error or ""
    if cell.grading is None or not cell.finished:
        return ""
    components = cell.grading.component_results or [cell.grading]
    failed = [c for c in components if not c.passed]
    judged = [c for c in components if c.judge]
    shown = (failed or judged or [None])[0]
    if shown is None:
        return ""
    return f"{check_name(shown.assertion)}: {preview(shown.reason, 200)}"


def check_name(assertion) -> str:
    """An assertion as a verdict line names it: its description before its type, when it has one."""
    if assertion is None:
        return "result"
    return f"{assertion.description} ({assertion.type})" if assertion.description else assertion.type


def cut_short_note(cell: CellResult) -> str:
    """Why a pending cell holds part of an output: a crash or a Stop cut its run short."""
    state = cell.result.state
    if cell.status != "pending" or state not in (RunState.INTERRUPTED, RunState.CANCELLED):
        return ""
    return f"{'interrupted' if state == RunState.INTERRUPTED else 'stopped'}: Resume runs it again"


def cell_tooltip(cell: CellResult, doubtful=()) -> str:
    verdict = f"UNRELIABLE (its judge said {cell.status})" if doubtful else cell.status.upper()
    parts = [verdict + (f" · score {cell.score:.2f}" if cell.grading else "")]
    parts += [f"Not counted: {describe(found)}" for found in doubtful]
    if cell.error:
        parts.append(f"Error: {cell.error}")
    if cell.grading:
        for component in cell.grading.component_results or [cell.grading]:
            verdict = "pass" if component.passed else "FAIL"
            parts.append(f"{check_name(component.assertion)}: {verdict} ({component.score:.2f}) "
                         f"{preview(component.reason, 300)}")
    if cell.output:
        parts += ["", preview(cell.output, 1200)]
    figures = [f"TTFT {cell.ttft_s:.2f} s" if cell.ttft_s is not None else "",
               f"{cell.decode_tps:.1f} tok/s" if cell.decode_tps else "",
               f"{cell.generated_tokens} tok" if cell.generated_tokens else "",
               f"{cell.cached_tokens}/{cell.prompt_tokens} prompt tok cached" if cell.cached_tokens else ""]
    if any(figures):
        parts += ["", " · ".join(f for f in figures if f)]
    parts.append("\nDouble-click to open it as a pane")
    return "\n".join(parts)
