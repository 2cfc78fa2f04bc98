"""One cell's assertions, scored as promptfoo scores them (src/assertions/assertionsResult.ts, index.ts).

- A test's score is Σ scoreᵢ·weightᵢ / Σ weightᵢ (0 when Σ weight is 0); weight defaults to 1.
- Without a threshold the test passes when every assertion passed (the last failure's reason is the reason);
  with a numeric threshold it passes when score ≥ threshold, whatever single assertions did (0 is honoured).
- `weight: 0` forces a pass and leaves the score alone; its `metric` is still reported (at weight 1).
- `metric` names a score: per test, the weighted mean of that metric's assertions (nested ones included).
- `assert-set` is scored the same way with its own threshold, then counts as one entry (its weight, metric).
- No assertions: pass, score 1, "No assertions".
`CellGrader` runs deterministic checks (and `similar`, through its embedder) at once and model-graded ones as
judge conversations (graders.py), so a caller can submit judge requests beside generation; `select-best` is
graded per row afterwards (`merge_select_best`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from app.engine import GenerationRequest
from app.evaluate import code_checks, conversation, graders, moderation, rag, webhook
from app.evaluate.checks import CHECKS, CheckError, Output, run_check
from app.evaluate.code_checks import code_embedder
from app.evaluate.similarity import check_similar
from app.evaluate.templates import js_fixed, js_string, render_value
from app.session.evaluation import Assertion, EvalCase, GradingResult, JudgeExchange


class ScoreSum:
    """promptfoo's AssertionsResult: accumulates component results into one GradingResult."""

    def __init__(self, threshold: float | None = None):
        self.threshold = threshold
        self.total = self.weights = 0.0
        self.failed_reason: str | None = None
        self.components: dict[int, GradingResult] = {}
        self.named: dict[str, float] = {}
        self.named_weights: dict[str, float] = {}

    def add(self, index: int, result: GradingResult, metric: str | None = None, weight: float = 1.0) -> None:
        self.total += result.score * weight
        self.weights += weight
        self.components[index] = result
        metric_weight = weight if weight != 0 else 1.0
        if metric:
            self.named[metric] = self.named.get(metric, 0.0) + result.score * metric_weight
            self.named_weights[metric] = self.named_weights.get(metric, 0.0) + metric_weight
        for name, score in result.named_scores.items():
            if name != metric:
                self.named[name] = self.named.get(name, 0.0) + score * metric_weight
                self.named_weights[name] = self.named_weights.get(name, 0.0) + metric_weight
        if not result.passed:
            self.failed_reason = result.reason

    def result(self, assertion: Assertion | None = None) -> GradingResult:
        score = self.total / self.weights if self.weights > 0 else 0.0
        passed, reason = self.failed_reason is None, self.failed_reason or "All assertions passed"
        if self.threshold is not None:
            passed = score >= self.threshold
            reason = (f"Aggregate score {js_fixed(score)} {'≥' if passed else '<'} {js_string(self.threshold)} "
                      "threshold")
        flat = []
        for index in sorted(self.components):
            component = self.components[index]
            flat.append(component)
            flat += [child.model_copy(update={"assertion": child.assertion or component.assertion})
                     for child in component.component_results]
        named = {k: (v / self.named_weights[k] if self.named_weights[k] > 0 else 0.0) for k, v in self.named.items()}
        return GradingResult(passed=passed, score=score, reason=reason, named_scores=named, component_results=flat,
                             assertion=assertion)


def no_assertions() -> GradingResult:
    return GradingResult(passed=True, score=1.0, reason="No assertions")


@dataclass(frozen=True)
class JudgeCall:
    """A judge request to send; `judge` is the provider that should answer it (None = the evaluation's judge)."""

    key: tuple
    request: GenerationRequest
    judge: object = None

    def __post_init__(self):  # the judge provider's own settings (max_tokens, temperature…), wherever it runs
        object.__setattr__(self, "request", graders.as_judge_asks(self.request, self.judge))


class CellGrader:
    """Grades one cell. `start()` returns the first judge calls; feed each reply to `reply()` (which may return
    more, for g-eval); when `done`, `result()` is the cell's GradingResult or raises CheckError (an ERROR cell)."""

    def __init__(self, case: EvalCase, output: Output, prompt: str, base_dir=None, embed=None, code=None,
                 provider: dict | None = None):
        self.case, self.output, self.prompt, self.base_dir = case, output, prompt, base_dir
        self.code = code  # a CodeRunner once the user allowed this config's code; None: code checks are errors
        self.provider = provider or {}  # {id, label} of the cell's variant, for code checks' context
        self.embed = embed  # texts -> vectors, for `similar` (similarity.py); None: `similar` is an error
        self.results: dict[tuple, GradingResult] = {}
        self.flows: dict[tuple, tuple] = {}
        self.error: str | None = None
        self.waiting_vectors = 0  # flows waiting for an embedder's vectors (answer-relevance in the window)
        self.resumed = None  # called (grader, judge calls) when such a flow goes on
        self._final: GradingResult | CheckError | None = None  # the result, once computed (`finish`)
        self.provider_output = output.value  # the output before the test's transform (cells.grader sets it)

    def _judge_for(self, assertion: Assertion):
        return assertion.provider or self.case.options.provider

    def _flow(self, assertion: Assertion, value, output: Output):
        case, options = self.case, self.case.options
        rubric = graders.load_rubric_prompt(assertion.rubric_prompt or options.rubric_prompt, self.base_dir)
        kind = assertion.base_type
        if kind == "llm-rubric":
            return graders.llm_rubric(assertion, value, output.text, case.vars, rubric)
        if kind in ("factuality", "model-graded-factuality"):
            return graders.factuality(assertion, value, output.text, self.prompt, case.vars, rubric,
                                      options.factuality)
        if kind == moderation.TYPE:
            return moderation.flow(assertion, value, output.text, self.prompt)
        if kind == conversation.TYPE:
            return conversation.relevance(assertion, output.text, self.prompt, case.vars, rubric)
        threshold = assertion.threshold if assertion.threshold is not None else rag.DEFAULT_THRESHOLD
        variables = case.vars
        if kind in rag.CONTEXT_TYPES and assertion.context_transform:  # the output before the test's transform
            context = rag.transformed_context(assertion, self._runner("the contextTransform"), self.provider_output,
                                              case.vars, self.prompt)
            variables = {**case.vars, "context": context}
        if kind == "context-faithfulness":
            return rag.faithfulness(assertion, output.text, variables, threshold)
        if kind == "context-relevance":
            return rag.relevance(assertion, output.text, variables, threshold)
        if kind == "context-recall":
            return rag.recall(assertion, value, output.text, self.prompt, variables, threshold)
        if kind == "answer-relevance":
            return rag.answer_relevance(assertion, output.text, self.prompt, case.vars, threshold)
        rubric_prompt = assertion.rubric_prompt or options.rubric_prompt
        return graders.g_eval(assertion, value, output.text, self.prompt, rubric_prompt)

    def _step(self, key: tuple, flow, assertion: Assertion, reply) -> list[JudgeCall]:
        try:
            request = next(flow) if reply is None else flow.send(reply)
            while isinstance(request, rag.EmbedAsk):  # answer-relevance's vectors, from the evaluation's embedder
                if self._vectors_later(key, flow, assertion, request.texts):
                    return []
                request = flow.send(self._vectors(request.texts))
        except StopIteration as stop:
            result = stop.value
            if result.assertion is None:
                result.assertion = assertion
            if assertion.weight == 0:
                result.passed = True
            result.judge = self.flows.pop(key, (None, None, []))[2]
            self.results[key] = result
            return []
        except CheckError as exc:
            self.flows.pop(key, None)
            self.error = self.error or str(exc)
            return []
        self.flows[key] = (flow, assertion, self.flows.get(key, (None, None, []))[2])
        self.flows[key][2].append(JudgeExchange(asked=request.messages[-1]["content"]))
        return [JudgeCall(key, request, self._judge_for(assertion))]

    def _vectors(self, texts: list[str]):
        """The texts' vectors, or why there are none (a text: the check fails with it, as promptfoo's)."""
        if self.embed is None:
            return "answer-relevance needs an embedder (--embedder, or Settings → Embedder in the window)"
        try:
            return self.embed(texts)
        except Exception as exc:  # noqa: BLE001 - an embedder's failure fails that check, as in promptfoo
            return str(exc) or type(exc).__name__

    def _vectors_later(self, key: tuple, flow, assertion: Assertion, texts: list[str]) -> bool:
        """An embedder that embeds on its own thread (the window's) is asked first; the flow goes on once the
        vectors are in, and `resumed(grader, calls)` tells whoever runs this grader (False: embed now)."""
        will_wait = getattr(self.embed, "will_wait", None)
        if will_wait is None or not will_wait(texts):
            return False
        self.flows[key] = (flow, assertion, self.flows.get(key, (None, None, []))[2])
        self.waiting_vectors += 1

        def arrived() -> None:
            self.waiting_vectors -= 1
            calls = self._step(key, flow, assertion, self._vectors(texts))
            if self.resumed is not None:
                self.resumed(self, calls)
        self.embed.prefetch(texts, arrived)
        return True

    def _runner(self, what: str):
        if self.code is None:
            raise CheckError(f"{what} runs code, which was not allowed for this evaluation")
        return self.code

    def context(self, assertion: Assertion | None = None) -> dict:
        """What code checks get as `context` (promptfoo's assertion context)."""
        found = {"prompt": self.prompt, "vars": self.case.vars,
                 "test": self.case.model_dump(by_alias=True, exclude_defaults=True, mode="json"),
                 "logProbs": self.output.logprobs, "provider": self.provider,
                 "providerResponse": {"output": self.output.value}}
        if assertion is not None and assertion.config:
            found["config"] = assertion.config
        return found

    def _output_for(self, assertion: Assertion) -> Output:
        if assertion.transform is None:
            return self.output
        value = self._runner("an assertion transform").transform(
            assertion.transform, self.output.value, {"vars": self.case.vars, "prompt": {"label": self.prompt}})
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return dataclasses.replace(self.output, text=text, raw=None if isinstance(value, str) else value)

    def _start_one(self, key: tuple, assertion: Assertion) -> list[JudgeCall]:
        kind = assertion.base_type
        if kind in ("select-best", "max-score"):  # graded per row, once its cells are final (cells.py)
            return []
        try:
            output = self._output_for(assertion)
            if kind in code_checks.CODE_TYPES:
                value = assertion.value if code_checks.is_script_ref(assertion.value) else render_value(
                    assertion.value, self.case.vars)
                runner = self._runner(f"the {kind} assertion")
                self.results[key] = runner.assertion(assertion, value, output.value, self.context(assertion))
                if assertion.weight == 0:
                    self.results[key].passed = True
                return []
            if code_checks.is_script_ref(assertion.value):  # the script returns the expected value
                value = self._runner(f"the {kind} assertion's value").script_value(
                    assertion, assertion.value, output.value, self.context(assertion))
            else:
                value = render_value(assertion.value, self.case.vars)
            if kind in CHECKS:
                self.results[key] = run_check(assertion, value, output)
                return []
            if kind == webhook.TYPE:
                self.results[key] = webhook.check(assertion, value, output.value, self.prompt, self.case.vars)
                if assertion.weight == 0:
                    self.results[key].passed = True
                return []
            if kind.split(":")[0] == "similar":
                embedder = code_embedder(assertion.provider)  # a custom JavaScript provider's callEmbeddingApi
                embed = self.embed
                if embedder is not None:
                    runner = self._runner("the embedding provider's code")
                    embed = lambda texts: runner.embed(embedder, texts)  # noqa: E731
                self.results[key] = check_similar(assertion, value, output.text, embed)
                return []
            if kind in graders.MODEL_GRADED:
                return self._step(key, self._flow(assertion, value, output), assertion, None)
            raise CheckError(f"Unknown assertion type: {assertion.type}")
        except CheckError as exc:
            self.error = self.error or str(exc)
            return []

    def start(self) -> list[JudgeCall]:
        calls = []
        for i, assertion in enumerate(self.case.assertions):
            if assertion.base_type == "assert-set":
                for j, child in enumerate(assertion.assertions or []):
                    calls += self._start_one((i, j), child)
            else:
                calls += self._start_one((i,), assertion)
        return calls

    def reply(self, key: tuple, text: str = "", error: str | None = None) -> list[JudgeCall]:
        flow, assertion, exchanges = self.flows[key]
        exchanges[-1].reply, exchanges[-1].error = text, error
        return self._step(key, flow, assertion, graders.JudgeReply(text=text, error=error))

    @property
    def done(self) -> bool:
        return not self.flows

    def _metric(self, assertion: Assertion) -> str | None:
        return render_value(assertion.metric, self.case.vars) if assertion.metric else None

    @property
    def scores_with_code(self) -> bool:
        """The test's `assertScoringFunction` will run when the result is asked for (on a worker thread, then:
        `finish`)."""
        return bool(self.case.assert_scoring_function and self.case.assertions and not self.error)

    @property
    def computed(self) -> bool:
        return self._final is not None

    def finish(self) -> None:
        """Compute the result now (any thread), running the scoring function if there is one; `result()` then
        returns it."""
        try:
            self._final = self._result()
        except CheckError as exc:
            self._final = exc

    def result(self) -> GradingResult:
        if self._final is None:
            self.finish()
        if isinstance(self._final, CheckError):
            raise self._final
        return self._final

    def _result(self) -> GradingResult:
        if self.error:
            raise CheckError(self.error)
        if not self.case.assertions:
            return no_assertions()
        result = self._summed()
        return self._scored_by_function(result) if self.case.assert_scoring_function else result

    def _scored_by_function(self, result: GradingResult) -> GradingResult:
        """promptfoo's testResult(scoringFunction): the function's GradingResult over the summed one; any failure
        of the function fails the test with score 0."""
        components = [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in result.component_results]
        context = {"componentResults": components, "tokensUsed": {"total": 0, "prompt": 0, "completion": 0,
                                                                  "cached": 0, "numRequests": 0}}
        if self.case.threshold is not None:
            context["threshold"] = self.case.threshold
        runner = self._runner("the assertScoringFunction")
        try:
            found = runner.scoring(self.case.assert_scoring_function, result.named_scores, context)
        except ValueError as exc:
            return result.model_copy(update={"passed": False, "score": 0.0,
                                             "reason": f"Scoring function error: {exc}"})
        update = {"passed": found["pass"], "score": float(found["score"]), "reason": found["reason"]}
        if isinstance(found.get("namedScores"), dict):
            update["named_scores"] = {k: float(v) for k, v in found["namedScores"].items()
                                      if isinstance(v, (int, float)) and not isinstance(v, bool)}
        return result.model_copy(update=update)

    def _summed(self) -> GradingResult:
        main = ScoreSum(self.case.threshold)
        for i, assertion in enumerate(self.case.assertions):
            if assertion.base_type == "assert-set":
                inner = ScoreSum(assertion.threshold)
                for j, child in enumerate(assertion.assertions or []):
                    if (i, j) in self.results:
                        inner.add(j, self.results[(i, j)], self._metric(child), child.weight)
                main.add(i, inner.result(assertion), self._metric(assertion), assertion.weight)
            elif (i,) in self.results:
                main.add(i, self.results[(i,)], self._metric(assertion), assertion.weight)
        return main.result()


def grade(case: EvalCase, output: Output, prompt: str, judge=None, base_dir=None, embed=None) -> GradingResult:
    """Grade synchronously; `judge(request, provider) -> text` answers judge calls (raise to report a failure);
    `embed(texts) -> vectors` serves `similar`."""
    grader = CellGrader(case, output, prompt, base_dir, embed)
    pending = grader.start()
    while pending:
        call = pending.pop(0)
        try:
            text, error = judge(call.request, call.judge), None
        except Exception as exc:  # noqa: BLE001 - any judge failure is that assertion's error
            text, error = "", str(exc)
        pending += grader.reply(call.key, text, error)
    return grader.result()


def merge_select_best(grading: GradingResult, verdict: GradingResult) -> GradingResult:
    """Add a row's select-best verdict to a cell's grading as promptfoo does: pass = both; a loss replaces the
    reason and the score."""
    update = {"passed": grading.passed and verdict.passed,
              "component_results": [*grading.component_results, verdict]}
    if not verdict.passed:
        update.update(reason=verdict.reason, score=verdict.score)
    return grading.model_copy(update=update)
