"""Model-graded assertions as pure judge conversations: each builds the judge's GenerationRequest and parses
its reply into a verdict with the judge's reason (promptfoo src/matchers/llmGrading.ts, rubric.ts, comparison.ts).

A flow is a generator: it yields a request, receives the reply (`JudgeReply`) and returns a GradingResult
(g-eval asks twice). A judge that fails to answer (a backend error) raises CheckError: the cell is an ERROR.
Deliberate difference: each reply is constrained with a JSON schema (llm-rubric to promptfoo's {reason, pass,
score}, factuality to {category, reason}, g-eval to {steps} then {score, reason}, select-best to an integer
index), because small local judges rarely write valid JSON on their own; parsing is promptfoo's all the same.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

from app.engine import GenerationRequest, SamplingParams
from app.evaluate import grader_prompts, providers
from app.evaluate.checks import CheckError, json_objects
from app.evaluate.templates import chat_messages, js_string, render
from app.session.evaluation import Assertion, GradingResult

JUDGE_SAMPLING = SamplingParams(temperature=0.0)
JUDGE_MAX_TOKENS = 512
REASON = {"type": "string", "maxLength": 400}  # bounded so a rambling judge still closes its JSON
VERDICT_SCHEMA = {"type": "object", "properties": {"reason": REASON, "pass": {"type": "boolean"},
                                                   "score": {"type": "number"}},
                  "required": ["reason", "pass", "score"]}
FACTUALITY_SCHEMA = {"type": "object", "properties": {"category": {"enum": list("ABCDE")}, "reason": REASON},
                     "required": ["category", "reason"]}
STEPS_SCHEMA = {"type": "object", "properties": {"steps": {"type": "array", "minItems": 1, "maxItems": 4,
                                                           "items": {"type": "string", "maxLength": 200}}},
                "required": ["steps"]}
GEVAL_SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10},
                                                 "reason": REASON}, "required": ["score", "reason"]}
RAG = frozenset({"context-faithfulness", "context-relevance", "context-recall", "answer-relevance"})  # rag.py
MODEL_GRADED = frozenset({"llm-rubric", "factuality", "model-graded-factuality", "g-eval", "select-best", *RAG,
                          "moderation",  # moderation.py: a guard model in the judge's place
                          "conversation-relevance"})  # conversation.py
NEGATION_IGNORED = frozenset({"factuality", "model-graded-factuality", "g-eval"})  # as promptfoo's handlers
GEVAL_THRESHOLD = 0.7
FACTUALITY_SCORES = {"A": "subset", "B": "superset", "C": "agree", "D": "disagree", "E": "differButFactual"}


@dataclass(frozen=True)
class JudgeReply:
    text: str = ""
    error: str | None = None


Flow = Generator[GenerationRequest, JudgeReply, GradingResult]


def try_parse(output: str):
    """promptfoo's tryParse: the output as JSON when it is JSON, else the text."""
    try:
        return json.loads(output)
    except ValueError:
        return output


def js_number(value) -> float:
    """JavaScript's Number(value) for what a JSON reply holds (NaN when it is not a number)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def load_rubric_prompt(value, base: Path | None = None) -> str | None:
    """A rubricPrompt as text: a string, a chat list (as JSON), or the contents of a file:// path."""
    if value is None:
        return None
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    text = str(value)
    if text.startswith("file://"):
        path = Path(text[7:])
        return (path if path.is_absolute() or base is None else base / path).read_text(encoding="utf-8")
    return text


def render_chat(prompt: str, context: dict) -> list[dict]:
    """promptfoo's renderLlmRubricPrompt: JSON prompts render leaf by leaf; text becomes one user message.
    Objects in the context print as compact JSON (templates.js_string)."""
    try:
        parsed = json.loads(prompt)
    except ValueError:
        parsed = None
    if isinstance(parsed, (list, dict)):
        def leaves(node):
            if isinstance(node, str):
                return render(node, context)
            if isinstance(node, list):
                return [leaves(n) for n in node]
            return {k: leaves(v) for k, v in node.items()} if isinstance(node, dict) else node
        messages = chat_messages(json.dumps(leaves(parsed)))
        if messages:
            return messages
    return [{"role": "user", "content": render(prompt, context)}]


def judge_request(messages: list[dict], schema: dict) -> GenerationRequest:
    return GenerationRequest(messages=messages, sampling=JUDGE_SAMPLING, max_tokens=JUDGE_MAX_TOKENS,
                             json_schema=schema)


def as_judge_asks(request: GenerationRequest, judge) -> GenerationRequest:
    """The request with the settings its judge provider's config writes (max_tokens, temperature, the other
    samplers: providers.judge_settings); a judge that writes none keeps Chorus's."""
    overrides, max_tokens = providers.judge_settings(judge)
    if not overrides and max_tokens is None:
        return request
    sampling = dataclasses.replace(request.sampling, **overrides)
    return dataclasses.replace(request, sampling=sampling, max_tokens=max_tokens or request.max_tokens)


def _answer(reply: JudgeReply, kind: str) -> str:
    if reply.error:
        raise CheckError(f"{kind} judge failed: {reply.error}")
    if not reply.text:
        raise CheckError(f"{kind} judge failed: No output")
    return reply.text


def parse_rubric_reply(text: str, assertion: Assertion) -> GradingResult:
    """promptfoo's runJsonGradingPrompt parsing, then `not-` (flip pass, score = 1 − score)."""
    objects = json_objects(text)
    if not objects:  # a grader error: fails whatever the negation
        return GradingResult(passed=False, score=0.0, reason=f"Could not extract JSON from llm-rubric response: "
                                                             f"{text}", assertion=assertion)
    parsed = objects[0]
    passed = parsed.get("pass", True)
    if passed is None:
        passed = True
    if not isinstance(passed, bool):
        passed = bool(re.fullmatch(r"true|yes|pass|y", js_string(passed), re.IGNORECASE))
    score = parsed.get("score")
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        number = js_number(score) if "score" in parsed else math.nan
        score = number if math.isfinite(number) else float(passed)
    if assertion.threshold is not None and math.isfinite(assertion.threshold):
        passed = passed and score >= assertion.threshold
    if assertion.negated:
        passed, score = not passed, 1.0 - score
    return GradingResult(passed=passed, score=float(score), reason=js_string(parsed.get("reason")) or
                         "No reason provided", assertion=assertion)


def llm_rubric(assertion: Assertion, rubric, output: str, variables: dict, rubric_prompt: str | None) -> Flow:
    context = {"output": try_parse(output), "rubric": rubric if rubric is not None else "", **variables}
    reply = yield judge_request(render_chat(rubric_prompt or grader_prompts.DEFAULT_GRADING_PROMPT, context),
                                VERDICT_SCHEMA)
    return parse_rubric_reply(_answer(reply, "llm-rubric"), assertion)


def parse_factuality_reply(text: str, assertion: Assertion, overrides: dict | None) -> GradingResult:
    scores = {letter: float((overrides or {}).get(name, 0 if letter == "D" else 1))
              for letter, name in FACTUALITY_SCORES.items()}
    objects = json_objects(text)
    category = objects[0].get("category") if objects else None
    if isinstance(category, str) and category.strip():
        option = category.strip().upper()
        if option not in scores:
            return GradingResult(passed=False, score=0.0, reason=f"Invalid category value: {option}",
                                 assertion=assertion)
        reason = js_string(objects[0].get("reason")).strip() or f"Category {option}"
    else:  # promptfoo's legacy format: "(A) because…"
        match = re.search(r"\s*\(?([a-eA-E])\)", text)
        if not match:
            return GradingResult(passed=False, score=0.0, reason="Factuality checker output did not match "
                                 f"expected format: {text}", assertion=assertion)
        option = match.group(1).upper()
        rest = re.search(r"\)\s*(.*)", text, re.DOTALL)
        reason = rest.group(1).strip() if rest and rest.group(1) else text
    score = scores[option]
    return GradingResult(passed=score > 0, score=score, reason=reason, assertion=assertion)


def factuality(assertion: Assertion, expected, output: str, question: str, variables: dict,
               rubric_prompt: str | None, overrides: dict | None) -> Flow:
    if not isinstance(expected, str):
        raise CheckError("factuality assertion type must have a string value")
    context = {"input": question, "ideal": expected, "completion": try_parse(output), **variables}
    reply = yield judge_request(render_chat(rubric_prompt or grader_prompts.PROMPTFOO_FACTUALITY_PROMPT, context),
                                FACTUALITY_SCHEMA)
    return parse_factuality_reply(_answer(reply, "factuality"), assertion, overrides)


def _g_eval_one(criteria: str, question: str, output: str, threshold: float, prompts: dict) -> Flow:
    steps_reply = yield judge_request(render_chat(prompts.get("steps") or grader_prompts.GEVAL_PROMPT_STEPS,
                                                  {"criteria": criteria}), STEPS_SCHEMA)
    text = _answer(steps_reply, "g-eval")
    objects = [o for o in json_objects(text) if "steps" in o]
    steps = objects[0]["steps"] if objects else None
    if not isinstance(steps, list):
        return GradingResult(passed=False, score=0.0,
                             reason=f"LLM-proposed evaluation steps are not in JSON format: {text}")
    if not steps:
        return GradingResult(passed=False, score=0.0, reason="LLM does not propose any evaluation step")
    context = {"criteria": criteria, "steps": "\n- ".join(map(js_string, steps)), "maxScore": "10",
               "input": try_parse(question), "output": try_parse(output)}
    reply = yield judge_request(render_chat(prompts.get("evaluate") or grader_prompts.GEVAL_PROMPT_EVALUATE,
                                            context), GEVAL_SCHEMA)
    text = _answer(reply, "g-eval")
    objects = json_objects(text)
    if not objects:
        return GradingResult(passed=False, score=0.0,
                             reason=f"LLM-proposed evaluation result is not in JSON format: {text}")
    score = js_number(objects[0].get("score")) / 10
    score = score if math.isfinite(score) else 0.0
    return GradingResult(passed=score >= threshold, score=score, reason=js_string(objects[0].get("reason")))


def g_eval(assertion: Assertion, criteria, output: str, question: str, rubric_prompt) -> Flow:
    if not question:
        raise CheckError("No source text to estimate reply")
    threshold = assertion.threshold if assertion.threshold is not None else GEVAL_THRESHOLD
    prompts = rubric_prompt if isinstance(rubric_prompt, dict) else {}
    items = criteria if isinstance(criteria, list) else [criteria]
    if not items or not all(isinstance(c, str) for c in items):
        raise CheckError("g-eval assertion type must have a string or array of strings value")
    results = []
    for item in items:
        results.append((yield from _g_eval_one(item, question, output, threshold, prompts)))
    score = sum(r.score for r in results) / len(results)
    reason = results[0].reason if len(results) == 1 else "\n\n".join(r.reason for r in results)
    return GradingResult(passed=score >= threshold, score=score, reason=reason, assertion=assertion)


def select_best_request(criteria: str, outputs: list[str], variables: dict,
                        rubric_prompt: str | None) -> GenerationRequest:
    context = {**variables, "criteria": criteria, "outputs": list(outputs)}
    schema = {"type": "integer", "minimum": 0, "maximum": max(len(outputs) - 1, 0)}
    return judge_request(render_chat(rubric_prompt or grader_prompts.SELECT_BEST_PROMPT, context), schema)


def parse_select_best(text: str, count: int, criteria: str, assertion: Assertion) -> list[GradingResult]:
    """One verdict per output: the first integer of the reply wins (pass, 1); a bad index fails them all."""
    match = re.search(r"\d+", text.strip())
    choice = int(match.group(0)) if match else None
    if choice is None or not 0 <= choice < count:
        shown = "NaN" if choice is None else choice
        return [GradingResult(passed=False, score=0.0, reason=f"Invalid select-best verdict: {shown}",
                              assertion=assertion) for _ in range(count)]
    return [GradingResult(passed=i == choice, score=1.0 if i == choice else 0.0,
                          reason=f"Output selected as the best: {criteria}" if i == choice else
                          f"Output not selected: {criteria}", assertion=assertion) for i in range(count)]
