"""conversation-relevance: promptfoo's windows, prompts (verbatim) and scoring, with scripted judge replies (the
parsing and arithmetic promptfoo applies to the same replies); a config using it is accepted."""

import json

import pytest
import yaml

from app.evaluate import conversation, load_config
from app.evaluate.checks import CheckError, Output
from app.evaluate.scoring import grade
from app.session.evaluation import Assertion, EvalCase

TURNS = [{"input": f"q{i} {{{{topic}}}}", "output": f"a{i}"} for i in range(4)]


def _grade(replies: list[str], variables: dict, threshold=None, config=None, kind="conversation-relevance"):
    asked = []

    def judge(request, _provider):
        asked.append(request.messages[-1]["content"])
        return replies.pop(0)
    case = EvalCase(vars=variables, assertions=[Assertion(type=kind, threshold=threshold, config=config)])
    result = grade(case, Output(text="the output"), "the prompt", judge=judge)
    return result.component_results[0], asked


def test_one_turn_is_the_prompt_and_the_output():
    verdict, asked = _grade(['{"verdict": "yes"}'], {})
    expected = [{"role": "user", "content": "the prompt"}, {"role": "assistant", "content": "the output"}]
    assert asked == [conversation.VERDICTS_PROMPT.replace("{messages}", json.dumps(expected, indent=2))]
    assert asked[0].startswith("Based on the given list of message exchanges") and asked[0].endswith("\n\nJSON:")
    assert (verdict.passed, verdict.score, verdict.reason) == (True, 1.0,
                                                              "1 out of 1 conversation windows were relevant")


def test_windows_slide_over_the_conversation_and_the_reason_is_summed_up():
    verdict, asked = _grade(['{"verdict": "yes"}', '{"verdict": "no", "reason": "off topic"}', "no json",
                             '{"verdict": "yes"}', '{"reason": "The score is 0.5 because a1 is off topic."}'],
                            {"_conversation": TURNS, "topic": "travel"}, threshold=0.9, config={"windowSize": 2})
    windows = [json.loads(ask.rsplit("\nMessages:\n", 1)[1].rsplit("\n\nJSON:", 1)[0]) for ask in asked[:4]]
    assert [[m["content"] for m in w] for w in windows] == [
        ["q0 travel", "a0"], ["q0 travel", "a0", "q1 travel", "a1"], ["q1 travel", "a1", "q2 travel", "a2"],
        ["q2 travel", "a2", "q3 travel", "a3"]]  # the vars rendered; the cell's own output is not judged
    assert "Relevancy Score:\n0.5\n\nIrrelevancies:\n" in asked[4]
    assert json.loads(asked[4].split("Irrelevancies:\n", 1)[1].rsplit("\n\nJSON:", 1)[0]) == [
        "off topic", "Error parsing output: No JSON object found in response"]
    assert (verdict.passed, verdict.score, verdict.reason) == (False, 0.5, "The score is 0.5 because a1 is off topic.")


def test_default_window_threshold_negation_and_a_failed_judge():
    verdict, asked = _grade(['{"verdict": "no"}'] * 10, {"_conversation": TURNS * 2 + TURNS[:2]})
    assert (verdict.passed, verdict.score) == (True, 0.0)  # threshold 0 by default
    assert len(asked) == 10 and len(json.loads(asked[9].rsplit("\nMessages:\n")[1].rsplit("\n\nJSON:")[0])) == 10
    verdict, asked = _grade(['{"verdict": "yes"}'] + ['{"verdict": "no"}'] * 9,
                            {"_conversation": TURNS * 2 + TURNS[:2]},
                            kind="not-conversation-relevance")  # `not-` ignored, as promptfoo's handler does
    assert (verdict.passed, verdict.score, verdict.reason) == (True, 0.1,
                                                              "1 out of 10 conversation windows were relevant")

    def broken(request, _provider):
        raise RuntimeError("judge down")
    case = EvalCase(assertions=[Assertion(type="conversation-relevance")])
    with pytest.raises(CheckError, match="judge down"):
        grade(case, Output(text="x"), "p", judge=broken)


def test_a_config_using_it_is_accepted(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump({
        "prompts": ["Reply to {{message}}"], "providers": ["echo"],
        "tests": [{"vars": {"_conversation": TURNS[:2]},
                   "assert": [{"type": "conversation-relevance", "threshold": 0.9, "config": {"windowSize": 3}}]}]}))
    case, = load_config(tmp_path / "promptfooconfig.yaml").cases
    assert case.assertions[0].type == "conversation-relevance"
