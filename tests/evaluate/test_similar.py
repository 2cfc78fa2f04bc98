"""promptfoo's `similar` rules (src/assertions/similar.ts, src/matchers/similarity.ts @11b5f7d6) on hand-made
vectors: the texts below map to fixed vectors, so every similarity, distance and verdict is known exactly. The
embedders themselves are tested on the real model in tests/backends/test_embedding.py and tests/cli."""

import math

import numpy as np
import pytest

from app.evaluate.checks import CheckError, Output
from app.evaluate.scoring import grade
from app.evaluate.similarity import CachedEmbed, check_similar, measure, uses_similar
from app.session.evaluation import Assertion, EvalCase, Evaluation

VECTORS = {"out": [1.0, 0.0], "near": [0.8, 0.6], "far": [0.0, 1.0], "opposite": [-1.0, 0.0], "zero": [0.0, 0.0],
           "long": [2.0, 0.0], "diag": [1.0, 1.0], "origin": [0.0, 0.0], "three-four": [3.0, 4.0]}


def embed(texts):
    return np.array([VECTORS[t] for t in texts])


def similar(kind="similar", value="near", output="out", threshold=None, weight=1.0, embedder=embed):
    assertion = Assertion(type=kind, value=value, threshold=threshold, weight=weight)
    return check_similar(assertion, value, output, embedder)


def test_metrics_match_promptfoos_functions():
    assert measure([1, 0], [0.8, 0.6], "cosine") == pytest.approx(0.8)
    assert measure([2, 0], [1, 1], "cosine") == pytest.approx(1 / math.sqrt(2))  # cosine ignores length
    assert measure([1, 0], [0, 0], "cosine") == 0.0  # a zero vector: 0, not NaN
    assert measure([2, 0], [1, 1], "dot_product") == pytest.approx(2.0)
    assert measure([0, 0], [3, 4], "euclidean") == pytest.approx(5.0)
    with pytest.raises(CheckError, match="Vectors must be of equal length"):
        measure([1, 0], [1, 0, 0], "cosine")


@pytest.mark.parametrize("kind, value, output, threshold, passed, score, reason", [
    # cosine (the default): similarity >= threshold; the default threshold is 0.75
    ("similar", "near", "out", None, True, 0.8, "Similarity 0.80 is greater than or equal to threshold 0.75"),
    ("similar:cosine", "near", "out", 0.8, True, 0.8, "Similarity 0.80 is greater than or equal to threshold 0.8"),
    ("similar", "near", "out", 0.81, False, 0.8, "Similarity 0.80 is less than threshold 0.81"),
    ("similar", "far", "out", None, False, 0.0, "Similarity 0.00 is less than threshold 0.75"),
    ("similar", "opposite", "out", 0, False, -1.0, "Similarity -1.00 is less than threshold 0"),
    # not-similar: similarity <= threshold, score 1 - similarity
    ("not-similar", "near", "out", 0.8, True, 0.2, "Similarity 0.80 is less than threshold 0.8"),
    ("not-similar", "near", "out", 0.5, False, 0.2, "Similarity 0.80 is greater than or equal to threshold 0.5"),
    # dot product: the raw product is the score, even above 1
    ("similar:dot", "diag", "long", 1.5, True, 2.0, "Similarity 2.00 is greater than or equal to threshold 1.5"),
    ("similar:dot", "diag", "long", 2.5, False, 2.0, "Similarity 2.00 is less than threshold 2.5"),
    # euclidean: distance <= threshold passes, score 1 / (1 + distance)
    ("similar:euclidean", "three-four", "origin", 5, True, 1 / 6, "Distance 5.00 is less than or equal to threshold 5"),
    ("similar:euclidean", "three-four", "origin", 4.9, False, 1 / 6, "Distance 5.00 is greater than threshold 4.9"),
    ("not-similar:euclidean", "three-four", "origin", 4.9, True, 5 / 6,
     "Distance 5.00 is greater than threshold 4.9"),
    ("not-similar:euclidean", "three-four", "origin", 6, False, 5 / 6,
     "Distance 5.00 is less than or equal to threshold 6"),
])
def test_single_value_verdicts(kind, value, output, threshold, passed, score, reason):
    result = similar(kind, value, output, threshold)
    assert (result.passed, result.reason) == (passed, reason)
    assert result.score == pytest.approx(score)
    assert result.assertion.type == kind


def test_a_list_passes_on_any_value_else_fails_with_the_best_score():
    hit = similar(value=["far", "near"], threshold=0.75)
    assert hit.passed and hit.score == pytest.approx(0.8)
    miss = similar(value=["far", "near"], threshold=0.9)
    assert not miss.passed and miss.score == pytest.approx(0.8)
    assert miss.reason == "None of the provided values met the similarity threshold"


def test_not_similar_list_fails_on_the_first_close_value_else_passes_with_the_lowest_score():
    close = similar("not-similar", value=["far", "near", "out"], threshold=0.5)
    assert not close.passed and close.score == pytest.approx(0.2)  # "near" fails first, not "out"
    clear = similar("not-similar", value=["far", "near"], threshold=0.9)
    assert clear.passed and clear.score == pytest.approx(0.2)  # 1 - 0.8: the tightest margin


@pytest.mark.parametrize("value, message", [
    (42, "must have a string or array of strings value"),
    ([], "at least one value"),
    (["near", 3], "must have a string or array of strings value"),
])
def test_bad_values_are_errors(value, message):
    with pytest.raises(CheckError, match=message):
        similar(value=value)


def test_unknown_metric_and_no_embedder_are_errors():
    with pytest.raises(CheckError, match="Unknown similarity metric: manhattan"):
        similar("similar:manhattan")
    with pytest.raises(CheckError, match="--embedder"):
        similar(embedder=None)


def test_an_embedder_failure_fails_the_assertion_with_its_message():
    def broken(_texts):
        raise RuntimeError("http://127.0.0.1:9/v1/embeddings: connection refused")

    result = similar(embedder=broken)
    assert not result.passed and result.score == 0.0 and "connection refused" in result.reason


def test_weight_zero_never_fails():
    result = similar(threshold=0.99, weight=0)
    assert result.passed and result.score == pytest.approx(0.8)


def test_graded_in_a_cell_with_other_assertions_and_each_text_embedded_once():
    seen = []

    def counting(texts):
        seen.extend(texts)
        return embed(texts)

    cached = CachedEmbed(counting)
    case = EvalCase(assertions=[Assertion(type="similar", value="near"), Assertion(type="not-similar", value="far"),
                                Assertion(type="contains", value="ou")])
    result = grade(case, Output(text="out"), "prompt", embed=cached)
    assert result.passed and result.score == pytest.approx((0.8 + 1.0 + 1.0) / 3)
    assert sorted(seen) == ["far", "near", "out"] and cached.calls == 3


def test_uses_similar_looks_inside_assert_sets():
    plain = Evaluation(cases=[EvalCase(assertions=[Assertion(type="contains", value="x")])])
    nested = Evaluation(cases=[EvalCase(assertions=[Assertion(type="assert-set", assertions=[
        Assertion(type="not-similar:dot", value="x")])])])
    assert not uses_similar(plain) and uses_similar(nested)


def test_a_custom_javascript_provider_embeds_for_similar(tmp_path):
    """promptfoo's custom provider as `similar`'s embedder: its class's callEmbeddingApi(text) gives
    {embedding}; an {error}, or code that cannot load, fails the check with the message."""
    from app.evaluate.code_checks import CodeRunner
    from app.evaluate.scoring import CellGrader
    from app.session.evaluation import EvalCase

    (tmp_path / "embed.js").write_text(
        "class P { constructor(o) { this.o = o; } id() { return 'e'; }\n"
        "  async callApi() { return null; }\n"
        "  async callEmbeddingApi(text) { return text === 'boom' ? {error: 'quota'} :\n"
        "    {embedding: [text.length, text.includes('a') ? 1 : 0]}; } }\n"
        "module.exports = P;\n", encoding="utf-8")
    (tmp_path / "needs.js").write_text("const fetch = require('node-fetch');\nmodule.exports = class {};\n",
                                       encoding="utf-8")
    code = CodeRunner(tmp_path)

    def verdict(value, output, provider="./embed.js"):
        case = EvalCase(assertions=[Assertion(type="similar", value=value, threshold=0.9, provider=provider)])
        grader = CellGrader(case, Output(text=output), "Q", tmp_path, code=code)
        assert grader.start() == []
        return grader.result().component_results[0]
    try:
        assert verdict("abc", "bca").passed  # same vector: cosine 1
        assert not verdict("xyz", "a").passed  # [3, 0] against [1, 1]: 0.71
        failed = verdict("boom", "a")
        assert not failed.passed and "quota" in failed.reason
        failed = verdict("x", "y", provider="file://needs.js")
        assert not failed.passed and "require('node-fetch') is not available" in failed.reason
    finally:
        code.close()
