"""Scoring as promptfoo scores (notes section 4): weights, metrics, thresholds, assert-set, no assertions."""

import pytest

from app.evaluate.checks import CheckError, Output
from app.evaluate.scoring import CellGrader, grade, merge_select_best
from app.session.evaluation import EvalCase, GradingResult


def case(*assertions, threshold=None, vars=None):
    return EvalCase.model_validate({"assert": list(assertions), "threshold": threshold, "vars": vars or {}})


def graded(test, text="hello world", **output):
    return grade(test, Output(text=text, **output), prompt="p")


def test_no_assertions_pass_with_score_one():
    result = graded(case())
    assert (result.passed, result.score, result.reason) == (True, 1.0, "No assertions")


def test_all_must_pass_and_the_reason_is_the_last_failure():
    result = graded(case({"type": "contains", "value": "hello"}, {"type": "contains", "value": "moon"},
                         {"type": "contains", "value": "sun"}))
    assert not result.passed
    assert result.score == pytest.approx(1 / 3)
    assert result.reason == 'Expected output to contain "sun"'
    assert [c.passed for c in result.component_results] == [True, False, False]
    assert graded(case({"type": "contains", "value": "hello"})).reason == "All assertions passed"


def test_weighted_score():
    result = graded(case({"type": "contains", "value": "hello", "weight": 3}, {"type": "contains", "value": "moon"}))
    assert result.score == pytest.approx(0.75)


def test_threshold_overrides_single_failures():
    test = case({"type": "contains", "value": "hello", "weight": 3}, {"type": "contains", "value": "moon"},
                threshold=0.7)
    result = graded(test)
    assert result.passed and result.reason == "Aggregate score 0.75 ≥ 0.7 threshold"
    below = graded(case({"type": "contains", "value": "hello"}, {"type": "contains", "value": "moon"}, threshold=0.6))
    assert not below.passed and below.reason == "Aggregate score 0.50 < 0.6 threshold"
    zero = graded(case({"type": "contains", "value": "moon"}, threshold=0))  # 0 is honoured: score >= 0
    assert zero.passed and zero.score == 0


def test_weight_zero_is_forced_pass_out_of_the_score_but_keeps_its_metric():
    result = graded(case({"type": "contains", "value": "hello"},
                         {"type": "contains", "value": "moon", "weight": 0, "metric": "moon"}))
    assert result.passed and result.score == 1.0
    assert result.named_scores == {"moon": 0.0}
    only_zero = graded(case({"type": "contains", "value": "moon", "weight": 0}))
    assert only_zero.passed and only_zero.score == 0.0  # Σ weight = 0 → score 0


def test_named_metrics_are_weighted_means_and_rendered_with_vars():
    test = case({"type": "contains", "value": "hello", "metric": "greet", "weight": 2},
                {"type": "contains", "value": "moon", "metric": "greet"},
                {"type": "contains", "value": "world", "metric": "{{topic}}"}, vars={"topic": "geo"})
    result = graded(test)
    assert result.named_scores == pytest.approx({"greet": 2 / 3, "geo": 1.0})


def test_assert_set_is_scored_then_counts_once():
    test = case({"type": "assert-set", "threshold": 0.5, "metric": "set", "weight": 2,
                 "assert": [{"type": "contains", "value": "hello"}, {"type": "contains", "value": "moon"}]},
                {"type": "contains", "value": "zzz"})
    result = graded(test)
    inner = result.component_results[0]
    assert inner.passed and inner.score == 0.5  # the set passes on its own threshold
    assert inner.assertion.type == "assert-set"
    assert result.score == pytest.approx((0.5 * 2 + 0) / 3)
    assert not result.passed  # the last top-level assertion failed
    assert result.named_scores == {"set": 0.5}
    # flattened: the set, then its two children (which carry their own assertion), then the last assertion
    assert [c.assertion.type for c in result.component_results] == ["assert-set", "contains", "contains", "contains"]


def test_assert_set_without_threshold_needs_all():
    result = graded(case({"type": "assert-set", "assert": [{"type": "contains", "value": "hello"},
                                                           {"type": "contains", "value": "moon"}]}))
    assert not result.passed and result.component_results[0].reason == 'Expected output to contain "moon"'


def test_assertion_values_render_with_vars():
    test = case({"type": "equals", "value": "{{ greeting }} world"}, vars={"greeting": "hello"})
    assert graded(test).passed


def test_an_assertion_that_cannot_run_makes_an_error():
    with pytest.raises(CheckError, match="cached"):
        graded(case({"type": "latency", "threshold": 100}), latency_ms=None)
    with pytest.raises(CheckError, match="Unknown assertion type"):
        graded(case({"type": "no-such-check"}))


def test_model_graded_flow_through_a_judge_function():
    test = case({"type": "llm-rubric", "value": "is a greeting"}, {"type": "contains", "value": "hello"})
    asked = []

    def judge(request, provider):
        asked.append(request)
        return '{"reason": "says hello", "pass": true, "score": 0.9}'

    result = grade(test, Output(text="hello world"), "p", judge=judge)
    assert len(asked) == 1 and asked[0].json_schema["required"] == ["reason", "pass", "score"]
    rubric = result.component_results[0]
    assert rubric.passed and rubric.score == 0.9 and rubric.reason == "says hello"
    assert rubric.judge[0].reply.startswith('{"reason"') and "is a greeting" in rubric.judge[0].asked
    assert result.score == pytest.approx(0.95)


def test_judge_failure_is_an_error_cell():
    grader = CellGrader(case({"type": "llm-rubric", "value": "x"}), Output(text="hi"), "p")
    (call,) = grader.start()
    assert not grader.done
    assert grader.reply(call.key, "", error="server down") == []
    assert grader.done
    with pytest.raises(CheckError, match="server down"):
        grader.result()


def test_judge_choice_assertion_over_test_options():
    test = EvalCase.model_validate({"assert": [{"type": "llm-rubric", "value": "x", "provider": "echo"},
                                               {"type": "llm-rubric", "value": "y"}],
                                    "options": {"provider": "openai:chat:judge"}})
    calls = CellGrader(test, Output(text="hi"), "p").start()
    assert [c.judge for c in calls] == ["echo", "openai:chat:judge"]


def test_merge_select_best():
    base = GradingResult(passed=True, score=1.0, reason="All assertions passed")
    lost = merge_select_best(base, GradingResult(passed=False, score=0.0, reason="Output not selected: x"))
    assert (lost.passed, lost.score, lost.reason) == (False, 0.0, "Output not selected: x")
    won = merge_select_best(base, GradingResult(passed=True, score=1.0, reason="Output selected as the best: x"))
    assert (won.passed, won.score, won.reason) == (True, 1.0, "All assertions passed")
    assert won.component_results[-1].reason.startswith("Output selected")
