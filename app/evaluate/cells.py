"""One cell's life as pure steps, shared by whatever runs cells (the window, `python -m app eval`):
`prepare` renders its prompt and builds its request (or gives its output directly: `echo`, `providerOutput`);
`record` takes the generation's Completion; `grader` starts its grading; `conclude` sets the final status.
A row with a `select-best` assertion gets one more judge call once all its cells are final
(`select_best_call`, then `apply_select_best`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass

from app.engine import Completion, GenerationRequest
from app.evaluate import cost, exec_prompts, graders, max_score, nunjucks_filters
from app.evaluate.checks import NEEDS_LOGPROBS, CheckError, Output
from app.evaluate.scoring import CellGrader, JudgeCall, merge_select_best
from app.evaluate.templates import TemplateProblem, chat_messages, js_string, render_prompt, render_value
from app.session.evaluation import Assertion, CellResult, EvalCase, Evaluation, GradingResult, JudgeExchange
from app.session.result import PaneResult, RunState


@dataclass(frozen=True)
class Prepared:
    prompt: str  # the rendered prompt text (JSON for a chat prompt)
    request: GenerationRequest | None  # None when the output is known without a model
    given_output: str | None = None
    calls_code: bool = False  # a custom provider: its code gives the output (CodeRunner.provider)


def _needs_logprobs(assertions: list[Assertion]) -> bool:
    return any(a.base_type in NEEDS_LOGPROBS or _needs_logprobs(a.assertions or []) for a in assertions)


def case_for(evaluation: Evaluation, cell: CellResult, code=None, registers: dict | None = None) -> EvalCase:
    """The cell's test case, its vars through `transformVars` when it has one (promptfoo: the test's, else
    defaultTest's, merged over the vars), then overwritten by the `registers` (the outputs earlier tests stored
    with `options.storeOutputAs`, as promptfoo's evaluator does); raises CheckError when transformVars fails or
    code is not allowed."""
    case = evaluation.cases[cell.case]
    script = case.options.transform_vars
    if script:
        if code is None:
            raise CheckError("transformVars runs code, which was not allowed for this evaluation")
        found = code.transform(script, case.vars, {"prompt": {}, "uuid": f"{cell.case}-{cell.variant}"}, "vars")
        if not isinstance(found, dict):
            raise CheckError("Transform function did not return a valid object")
        case = case.model_copy(update={"vars": {**case.vars, **found}})
    return case.model_copy(update={"vars": {**case.vars, **registers}}) if registers else case


def prepare(evaluation: Evaluation, cell: CellResult, code=None, registers: dict | None = None) -> Prepared:
    """Render the cell's prompt; raises TemplateProblem when the template fails on this case's vars, CheckError
    when its transformVars or its `exec:` command does (which run only with a CodeRunner: `code`). `registers`:
    stored outputs (case_for)."""
    case, variant = case_for(evaluation, cell, code, registers), evaluation.variants[cell.variant]
    raw = case.options.prefix + variant.prompt.raw + case.options.suffix
    if variant.prompt.exec is not None:  # its command's output is the template (exec_prompts.py)
        if code is None:
            raise CheckError("this prompt runs a command, which was not allowed for this evaluation")
        raw = exec_prompts.run(variant.prompt, case.vars, variant.provider_id, variant.label, code.base_dir)
    filters = nunjucks_filters.callables(evaluation.nunjucks_filters, code) if evaluation.nunjucks_filters else None
    prompt = render_prompt(raw, case.vars, filters)
    if case.provider_output is not None:
        given = case.provider_output
        return Prepared(prompt, None, given if isinstance(given, str) else json.dumps(given, ensure_ascii=False))
    if variant.target.kind == "echo":
        return Prepared(prompt, None, prompt)
    if variant.target.kind == "code":
        return Prepared(prompt, None, calls_code=True)
    logprobs = 1 if _needs_logprobs(case.assertions) else 0
    return Prepared(prompt, variant.request(prompt, chat_messages(prompt), logprobs=logprobs))


def start(cell: CellResult, prepared: Prepared) -> None:
    """Reset the cell for a (re)run, with a fresh result for its generation to stream into; a given output is
    its result at once (latency unknown: not generated now). What an earlier, cut-short run generated stays
    counted in `cut_short_tokens`."""
    cell.cut_short_tokens += cell.result.generated_tokens
    cell.prompt, cell.error, cell.latency_ms, cell.cached, cell.grading = prepared.prompt, None, None, False, None
    cell.result, cell.status = PaneResult(), "running"
    if prepared.given_output is not None:
        cell.result, cell.status = PaneResult(state=RunState.DONE, text=prepared.given_output), "grading"


def record(cell: CellResult, completion: Completion, latency_ms: float | None) -> None:
    """Take a generation's end: its Completion's final figures into the cell's result (the SessionRunner has
    put them there already: setting them again changes nothing); an engine/backend error makes the cell an ERROR."""
    cell.result.finish(completion)
    cell.latency_ms = latency_ms
    if completion.finish_reason in ("error", "cancelled"):
        cell.status = "error" if completion.finish_reason == "error" else "pending"
        cell.error = completion.error or completion.finish_reason
    else:
        cell.status = "grading"


def call_provider(evaluation: Evaluation, cell: CellResult, code, registers: dict | None = None
                  ) -> tuple[str, float, tuple[int, int]]:
    """A custom provider's output for the cell (any thread), its latency in ms and the (prompt, completion) tokens
    it says it used; raises CheckError."""
    if code is None:
        raise CheckError("this provider runs code, which was not allowed for this evaluation")
    started = time.perf_counter()
    variables = case_for(evaluation, cell, code, registers).vars
    text, tokens = code.provider(evaluation.variants[cell.variant], cell.prompt, variables)
    return text, (time.perf_counter() - started) * 1000, tokens


def given(cell: CellResult, text: str, latency_ms: float | None, tokens: tuple[int, int] = (0, 0)) -> None:
    """The output a custom provider gave, and the tokens it says it used, as the cell's result (owning thread)."""
    cell.result = PaneResult(state=RunState.DONE, text=text, prompt_tokens=tokens[0], generated_tokens=tokens[1])
    cell.latency_ms, cell.status = latency_ms, "grading"


def grader(evaluation: Evaluation, cell: CellResult, base_dir=None, embed=None, code=None,
           text: str | None = None, registers: dict | None = None) -> CellGrader:
    """The cell's grader; the test's `transform` (code) has run on the output (`text` when given: a custom
    provider's, before the cell holds it). Raises CheckError when a transform fails or code is not allowed."""
    variant, case = evaluation.variants[cell.variant], evaluation.cases[cell.case]
    output = Output(text=cell.output if text is None else text, latency_ms=cell.latency_ms,
                    finish_reason=cell.finish_reason,
                    logprobs=cell.logprobs, tool_calls=tuple(cell.result.tool_calls), tools=tuple(variant.tools),
                    cost=cost.of_cell(variant, case, cell),
                    functions=tuple(variant.functions or ()))
    case = case_for(evaluation, cell, code, registers)
    provider_output = output.value
    for what, script in (("the provider's transform", variant.transform), ("the test's transform",
                                                                           case.options.transform)):
        if what == "the test's transform":
            provider_output = output.value  # what a contextTransform sees (promptfoo: providerTransformedOutput)
        if script:  # promptfoo's order: the provider's, then the test's (an assertion's own comes last)
            if code is None:
                raise CheckError(f"{what} runs code, which was not allowed for this evaluation")
            value = code.transform(script, output.value, {"vars": case.vars, "prompt": {
                "raw": cell.prompt, "label": variant.prompt.label}})
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            output = dataclasses.replace(output, text=text, raw=None if isinstance(value, str) else value)
    grader = CellGrader(case, output, cell.prompt, base_dir, embed, code,
                        {"id": variant.provider_id, "label": variant.label})
    grader.provider_output = provider_output
    return grader


def conclude(cell: CellResult, graded: CellGrader) -> None:
    """Final status from a finished grader: pass / fail, or error when an assertion could not be evaluated."""
    try:
        result: GradingResult = graded.result()
    except CheckError as exc:
        cell.status, cell.error, cell.grading = "error", str(exc), None
        return
    cell.grading = result
    cell.status = "pass" if result.passed else "fail"


def fail_prepare(cell: CellResult, problem: TemplateProblem) -> None:
    cell.status, cell.error = "error", js_string(str(problem))


def select_best_assertion(evaluation: Evaluation, case: int) -> Assertion | None:
    return next((a for a in evaluation.cases[case].assertions if a.base_type == "select-best"), None)


def select_best_call(evaluation: Evaluation, case: int, repeat: int = 0) -> JudgeCall | None:
    """The judge call comparing a finished row's outputs (promptfoo runs it after the row), or None when the row
    has no select-best or is not finished."""
    assertion = select_best_assertion(evaluation, case)
    row = evaluation.row(case, repeat)
    if assertion is None or not all(cell.finished for cell in row) or any(
            cell.status == "error" and (cell.error or "").startswith("select-best") or cell.grading and any(
                c.assertion and c.assertion.base_type == "select-best" for c in cell.grading.component_results)
            for cell in row):
        return None  # not finished yet, or already judged (a resumed run asks again only when it was not)
    test = evaluation.cases[case]
    criteria = render_value(assertion.value, test.vars)
    rubric = graders.load_rubric_prompt(assertion.rubric_prompt or test.options.rubric_prompt)
    request = graders.select_best_request(js_string(criteria), [cell.output for cell in row], test.vars, rubric)
    return JudgeCall(("select-best", case, repeat), request, assertion.provider or test.options.provider)


def apply_select_best(evaluation: Evaluation, case: int, repeat: int, text: str, error: str | None = None) -> None:
    """Merge the judge's choice into every graded cell of the row; a judge failure makes them ERRORs."""
    assertion = select_best_assertion(evaluation, case)
    row = evaluation.row(case, repeat)
    criteria = js_string(render_value(assertion.value, evaluation.cases[case].vars))
    verdicts = graders.parse_select_best(text, len(row), criteria, assertion)
    asked = evaluation_request_text(evaluation, case, repeat)  # before the first merge marks the row judged
    for cell, verdict in zip(row, verdicts, strict=True):
        if cell.grading is None:
            continue  # an ERROR cell stays one
        if error:
            cell.status, cell.error = "error", f"select-best judge failed: {error}"
            continue
        verdict.judge = [JudgeExchange(asked=asked, reply=text)]
        cell.grading = merge_select_best(cell.grading, verdict)
        cell.status = "pass" if cell.grading.passed else "fail"
    max_score.apply(evaluation, case, repeat)  # promptfoo: after select-best


def evaluation_request_text(evaluation: Evaluation, case: int, repeat: int) -> str:
    call = select_best_call(evaluation, case, repeat)
    return call.request.messages[-1]["content"] if call else ""
