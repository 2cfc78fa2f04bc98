"""promptfoo's `similar` assertion (src/assertions/similar.ts and src/matchers/similarity.ts, read at 11b5f7d6).

- `similar` / `similar:cosine` is cosine similarity, `similar:dot` the dot product, `similar:euclidean` the
  distance; any other suffix is an error. The threshold defaults to 0.75 (a CSV cell's `similar` gets 0.8 when it
  is parsed, assertion_strings.py).
- cosine and dot pass when similarity ≥ threshold − ε (score = similarity); euclidean passes when distance ≤
  threshold + ε (score = 1 / (1 + distance)). `not-` flips the comparison (≤ / ≥) and the score (1 − score).
- A list of values: `similar` passes on the first value that passes, else fails with the best score;
  `not-similar` fails on the first value the output is too similar to, else passes with the lowest score.
- The value must be a string or a non-empty list of strings (else an ERROR cell); vectors of unequal length are an
  error; an embedder failure fails the assertion with its message, as promptfoo's provider errors do.
`CachedEmbed` wraps an embedder so each distinct text is embedded once per run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

import numpy as np

from app.evaluate.checks import CheckError
from app.evaluate.code_checks import code_embedder
from app.evaluate.templates import js_fixed, js_string, render_value
from app.session.evaluation import Assertion, EvalCase, Evaluation, GradingResult

DEFAULT_THRESHOLD = 0.75
METRICS = {"cosine": "cosine", "dot": "dot_product", "euclidean": "euclidean"}
EPSILON = sys.float_info.epsilon  # JavaScript's Number.EPSILON

Embed = Callable[[list[str]], np.ndarray]


def metric_of(assertion_type: str) -> str:
    """"cosine", "dot_product" or "euclidean" from `similar[:suffix]` (with or without `not-`)."""
    if ":" not in assertion_type:
        return "cosine"
    suffix = assertion_type.split(":")[1]
    if suffix not in METRICS:
        raise CheckError(f"Unknown similarity metric: {suffix}")
    return METRICS[suffix]


def measure(a, b, metric: str) -> float:
    """promptfoo's cosineSimilarity (0 when a vector is zero), dotProduct, euclideanDistance."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        raise CheckError("Vectors must be of equal length")
    if metric == "cosine":
        norms = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b) / norms if norms > 0 else 0.0
    if metric == "dot_product":
        return float(a @ b)
    return float(np.linalg.norm(a - b))


def judge_one(value_vec, output_vec, threshold: float, inverse: bool, metric: str) -> GradingResult:
    """buildSimilarityResult: one expected value against the output."""
    found = measure(value_vec, output_vec, metric)
    shown = js_string(threshold)
    if metric == "euclidean":
        passed = found >= threshold - EPSILON if inverse else found <= threshold + EPSILON
        score = 1 / (1 + found)
        within = f"Distance {js_fixed(found)} is less than or equal to threshold {shown}"
        beyond = f"Distance {js_fixed(found)} is greater than threshold {shown}"
        reason = (beyond if inverse else within) if passed else (within if inverse else beyond)
    else:
        passed = found <= threshold + EPSILON if inverse else found >= threshold - EPSILON
        score = found
        above = f"Similarity {js_fixed(found)} is greater than or equal to threshold {shown}"
        below = f"Similarity {js_fixed(found)} is less than threshold {shown}"
        reason = (below if inverse else above) if passed else (above if inverse else below)
    return GradingResult(passed=passed, score=1 - score if inverse else score, reason=reason)


def _failed(reason: str) -> GradingResult:
    return GradingResult(passed=False, score=0.0, reason=reason)


def check_similar(assertion: Assertion, value, output: str, embed: Embed | None) -> GradingResult:
    """handleSimilar: the verdict of `similar[:metric]` (or `not-similar`) on one output."""
    if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise CheckError("Similarity assertion type must have a string or array of strings value")
    if isinstance(value, list) and not value:
        raise CheckError("Similarity assertion must have at least one value to compare against")
    if embed is None:
        raise CheckError("similar needs an embedder: name one with --embedder (local, PATH.gguf or URL)")
    metric = metric_of(assertion.type)
    threshold = DEFAULT_THRESHOLD if assertion.threshold is None else float(assertion.threshold)
    values = value if isinstance(value, list) else [value]
    try:
        vectors = embed([output, *values])
    except Exception as exc:  # noqa: BLE001 - promptfoo: a provider error fails the assertion with its message
        return _with(assertion, _failed(str(exc) or "Unknown error fetching embeddings"))
    results = [judge_one(vec, vectors[0], threshold, assertion.negated, metric) for vec in vectors[1:]]
    if not isinstance(value, list):
        return _with(assertion, results[0])
    if assertion.negated:
        failed = next((r for r in results if not r.passed), None)
        return _with(assertion, failed or min(results, key=lambda r: r.score))
    passed = next((r for r in results if r.passed), None)
    if passed is not None:
        return _with(assertion, passed)
    best = max(r.score for r in results)
    return _with(assertion, GradingResult(passed=False, score=best,
                                          reason="None of the provided values met the similarity threshold"))


def _with(assertion: Assertion, result: GradingResult) -> GradingResult:
    result.assertion = assertion
    if assertion.weight == 0:
        result.passed = True
    return result


class CachedEmbed:
    """An embedder's `embed`, each distinct text embedded once (thread-safe); `calls` counts texts embedded."""

    def __init__(self, embed: Embed):
        self._embed, self._cache, self._lock, self.calls = embed, {}, threading.Lock(), 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                for text, vector in zip(missing, self._embed(missing), strict=True):
                    self._cache[text] = vector
                self.calls += len(missing)
            return np.vstack([self._cache[t] for t in texts])


def uses_similar(evaluation: Evaluation) -> bool:
    """Whether any test (assert-sets included) has a `similar` (or `answer-relevance`) assertion that embeds with
    the evaluation's embedder (not the config's own code): only then is an embedder opened."""
    stack = [a for case in evaluation.cases for a in case.assertions]
    while stack:
        assertion = stack.pop()
        stack += assertion.assertions or []
        kind = assertion.base_type.split(":")[0]
        if kind == "answer-relevance" or kind == "similar" and not code_embedder(assertion.provider):
            return True
    return False


def similar_texts(case: EvalCase, output: str) -> list[str]:
    """The texts grading `case`'s `similar` assertions on `output` will embed: the output, then every value
    (rendered with the test's vars); [] when it has none (a value that will not render is left to the grader)."""
    values: list[str] = []
    stack = list(case.assertions)
    while stack:
        assertion = stack.pop(0)
        stack += assertion.assertions or []
        if assertion.base_type.split(":")[0] != "similar" or code_embedder(assertion.provider):
            continue  # not `similar`, or its embedder is the config's own code (scoring.py)
        try:
            value = render_value(assertion.value, case.vars)
        except Exception:  # noqa: BLE001 - the grader reports it as the cell's error
            continue
        values += [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]
    return [output, *values] if values else []
