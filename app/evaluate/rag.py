"""promptfoo's RAG assertions as judge conversations (src/matchers/rag.ts and src/assertions/context*.ts,
answerRelevance.ts, 0.123.1), on the evaluation's judge (and, for answer-relevance, its embedder).

- The context is the test's `context` var (a string, or a list of strings joined by blank lines); context-recall
  falls back to the rendered prompt. context-faithfulness and context-relevance need a `query` var;
  answer-relevance uses `query`, else the prompt. An assertion's `contextTransform` (code, run on the output after
  the provider's transform, before the test's) gives the context instead (`transformed_context`).
- context-faithfulness: the judge turns the output into statements (one per line), then judges each against the
  context; score = share supported ("Final verdict for each statement in order: Yes. No." or "Verdict: yes/no").
- context-relevance: the judge quotes the context's sentences the query needs; score = quoted / all (units: the
  list's items, else the context's lines when it has several, else its sentences); "Insufficient Information"
  scores 0; quoting text that is not in the context is a grader failure.
- context-recall: the judge marks each sentence of the expected value [Attributed] / [Not Attributed]; score =
  attributed / classified.
- answer-relevance: the judge writes three questions the output answers; score = mean cosine similarity of each
  to the query (embedded with the evaluation's embedder).
Each passes at score ≥ threshold (default 0.5); `not-` flips pass and makes the score 1 − score, except for a
grader failure (pass false, score 0). Replies are free text, as promptfoo's prompts ask (no JSON schema).
"""

from __future__ import annotations

import re

from app.evaluate import graders, rag_prompts
from app.evaluate.check_types import CheckError
from app.evaluate.graders import JudgeReply, judge_request, render_chat, try_parse
from app.evaluate.similarity import EPSILON, measure
from app.evaluate.templates import js_string
from app.session.evaluation import Assertion, GradingResult

TYPES = graders.RAG
CONTEXT_TYPES = frozenset({"context-faithfulness", "context-relevance", "context-recall"})  # contextTransform's
DEFAULT_THRESHOLD = 0.5
_INSUFFICIENT = "Insufficient Information"
_FINAL = "final verdict for each statement in order:"


class EmbedAsk:
    """A flow's request for vectors of `texts` (answered with an array, or an exception's message as text)."""

    def __init__(self, texts: list[str]):
        self.texts = texts


def _lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def _sentences(text: str) -> list[str]:
    """promptfoo's splitTextIntoSentences."""
    units = _lines(text)
    units = units if len(units) > 1 else re.split(r"(?<=[.!?])\s+", text)
    return [u.strip() for u in units if u.strip() and not re.fullmatch(r"\d+[.)]", u.strip())]


def context_of(variables: dict, fallback: str | None):
    context = variables.get("context")
    if isinstance(context, list):
        for i, item in enumerate(context):
            if not isinstance(item, str):
                raise CheckError(f"Invariant failed: Invalid context: expected an array of strings, but found "
                                 f"{'object' if item is None else type(item).__name__} at index {i}")
    elif not isinstance(context, str) or not context:
        context = fallback
    if not context or (isinstance(context, list) and not all(context)):
        raise CheckError('Invariant failed: Context is required for context-based assertions. Provide either a '
                         '"context" variable (string or array of strings) in your test case or use '
                         '"contextTransform" to extract context from the provider response.')
    return context


def transformed_context(assertion: Assertion, code, output, variables: dict, prompt: str):
    """promptfoo's resolveContext with a contextTransform: what the code returns from the output (`code` is the
    CodeRunner) is the context, a string or a list of strings; raises CheckError naming the expression."""
    expression = assertion.context_transform
    try:
        found = code.transform(expression, output, {"vars": variables, "prompt": {"label": prompt}})
        if not (isinstance(found, str) or isinstance(found, list) and all(isinstance(i, str) for i in found)):
            kind = ("boolean" if isinstance(found, bool) else "number" if isinstance(found, (int, float)) else
                    "object")  # JavaScript's typeof
            raise CheckError(f"contextTransform must return a string or array of strings. Got {kind}. Check your "
                             f"transform expression: {expression}")
    except CheckError as exc:
        raise CheckError(f"Failed to transform context using expression '{expression}': {exc}") from None
    return found


def _serialised(context) -> str:
    return "\n\n".join(context) if isinstance(context, list) else context


def _failed(reason: str) -> GradingResult:
    return GradingResult(passed=False, score=0.0, reason=reason)  # a grader failure: `not-` does not flip it


def _verdict(score: float, threshold: float, what: str, assertion: Assertion, sign=(">=", "<")) -> GradingResult:
    passed = score >= threshold - EPSILON
    reason = f"{what} {score:.2f} is {sign[0] if passed else sign[1]} {js_string(threshold)}"
    if assertion.negated:
        passed, score = not passed, 1 - score
    return GradingResult(passed=passed, score=score, reason=reason, assertion=assertion)


def _text(reply: JudgeReply) -> str | None:
    if reply.error:
        raise CheckError(f"RAG judge failed: {reply.error}")
    return reply.text or None


def _ask(prompt: str, context: dict):
    return judge_request(render_chat(prompt, context), None)


def _query_and_context(variables: dict, kind: str):
    query = variables.get("query")
    if not isinstance(query, str):
        raise CheckError(f'Invariant failed: {kind} assertion requires a "query" variable with the user question')
    return query, context_of(variables, None)


def faithfulness(assertion: Assertion, output: str, variables: dict, threshold: float):
    query, context = _query_and_context(variables, "context-faithfulness")
    text = _text((yield _ask(rag_prompts.CONTEXT_FAITHFULNESS_LONGFORM,
                             {**variables, "question": query, "answer": try_parse(output)})))
    if text is None:
        return _failed("No output")
    statements = _lines(text)
    if not statements:
        return _failed("Could not extract context-faithfulness statements")
    text = _text((yield _ask(rag_prompts.CONTEXT_FAITHFULNESS_NLI_STATEMENTS,
                             {**variables, "context": _serialised(context), "statements": statements})))
    if text is None:
        return _failed("No output")
    verdicts = text.lower().strip()
    if _FINAL in verdicts:
        answers = [a for a in verdicts[verdicts.index(_FINAL) + len(_FINAL):].split(".") if a.strip()]
        if not answers or not all(re.search(r"\b(?:yes|no)\b", a) for a in answers):
            return _failed("Could not parse context-faithfulness verdicts")
        unsupported = sum("yes" not in a for a in answers) + max(0, len(statements) - len(answers))
    else:
        no, yes = verdicts.count("verdict: no"), verdicts.count("verdict: yes")
        if no + yes == 0:
            return _failed("Could not parse context-faithfulness verdicts")
        unsupported = no + max(0, len(statements) - no - yes)
    score = min(1.0, max(0.0, 1 - unsupported / len(statements)))
    return _verdict(score, threshold, "Faithfulness", assertion)


def relevance(assertion: Assertion, output: str, variables: dict, threshold: float):
    query, context = _query_and_context(variables, "context-relevance")
    joined = _serialised(context)
    text = _text((yield _ask(rag_prompts.CONTEXT_RELEVANCE, {"context": joined, "query": query})))
    if text is None:
        return _failed("No output")
    segmented = isinstance(context, list) or len(_lines(context)) > 1
    units = [c for c in context if c.strip()] if isinstance(context, list) else _sentences(context)
    insufficient = _INSUFFICIENT in text
    quoted = [] if insufficient else list(dict.fromkeys(_lines(text) if segmented else _sentences(text)))

    def norm(value: str) -> str:
        return " ".join(value.lower().split())
    if quoted and not any(norm(re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", s)) in norm(joined) for s in quoted):
        return _failed("Grader output does not quote the provided context")
    score = min(len(quoted), len(units)) / len(units) if units else 0.0
    return _verdict(score, threshold, "Context relevance", assertion)


def recall(assertion: Assertion, expected, output: str, prompt: str, variables: dict, threshold: float):
    if not isinstance(expected, str):
        raise CheckError("Invariant failed: context-recall assertion requires a string value (expected answer or "
                         "fact to verify)")
    context = context_of(variables, prompt)
    text = _text((yield _ask(rag_prompts.CONTEXT_RECALL,
                             {**variables, "context": _serialised(context), "groundTruth": expected})))
    if text is None:
        return _failed("No output")
    marked = [s for s in _lines(text) if "[attributed]" in s.lower() or "[not attributed]" in s.lower()]
    if not marked:
        return _failed("Grader returned no [Attributed]/[Not Attributed] classifications")
    attributed = sum("[not attributed]" not in s.lower() for s in marked)
    return _verdict(attributed / len(marked), threshold, "Recall", assertion)


def answer_relevance(assertion: Assertion, output: str, prompt: str, variables: dict, threshold: float):
    query = variables.get("query") if isinstance(variables.get("query"), str) else prompt
    questions = []
    for _ in range(3):
        text = _text((yield _ask(rag_prompts.ANSWER_RELEVANCY_GENERATE, {"answer": try_parse(output)})))
        if text is None:
            return _failed("No output")
        questions.append(text)
    vectors = yield EmbedAsk([query, *questions])
    if isinstance(vectors, str):
        return _failed(vectors)
    similarity = sum(measure(vectors[0], v, "cosine") for v in vectors[1:]) / len(questions)
    return _verdict(similarity, threshold, "Relevance", assertion, ("greater than threshold", "less than threshold"))
