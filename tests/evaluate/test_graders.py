"""Model-graded assertions: the judge requests Chorus builds and promptfoo's parsing of the replies (notes §5)."""

import json

import pytest

from app.evaluate import grader_prompts, graders
from app.evaluate.checks import CheckError
from app.evaluate.graders import JudgeReply
from app.session.evaluation import Assertion

NOTES_SYSTEM = """You are grading output according to a user-specified rubric. If the statement in the rubric is \
true, then the output passes the test. You respond with a JSON object with this structure: {reason: string, pass: \
boolean, score: number}

Examples:

<Output>Hello world</Output>
<Rubric>Content contains a greeting</Rubric>
{"reason": "the content contains the word 'Hello'", "pass": true, "score": 1.0}

<Output>Avast ye swabs, repel the invaders!</Output>
<Rubric>Does not speak like a pirate</Rubric>
{"reason": "'avast ye' is a common pirate term", "pass": false, "score": 0.0}"""


def run(flow, *replies):
    """Drive a flow with literal replies; returns (requests, result)."""
    requests = [next(flow)]
    for reply in replies:
        try:
            requests.append(flow.send(JudgeReply(text=reply)))
        except StopIteration as stop:
            return requests, stop.value
    raise AssertionError("the flow asked for more replies")


def test_default_rubric_prompt_is_promptfoos():
    system, user = json.loads(grader_prompts.DEFAULT_GRADING_PROMPT)
    assert system == {"role": "system", "content": NOTES_SYSTEM}
    assert user == {"role": "user", "content": "<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"}


def test_llm_rubric_request():
    rubric = Assertion(type="llm-rubric", value="mentions {{city}}")
    requests, result = run(graders.llm_rubric(rubric, "mentions Paris", "It is Paris.", {"city": "Paris"}, None),
                           '{"reason": "names Paris", "pass": true, "score": 1}')
    request = requests[0]
    assert request.messages[0]["content"] == NOTES_SYSTEM
    assert request.messages[1]["content"] == "<Output>\nIt is Paris.\n</Output>\n<Rubric>\nmentions Paris\n</Rubric>"
    assert request.json_schema == graders.VERDICT_SCHEMA  # the deliberate difference: a constrained reply
    assert request.sampling.temperature == 0
    assert (result.passed, result.score, result.reason) == (True, 1.0, "names Paris")


def test_llm_rubric_output_json_is_compacted_and_vars_are_available():
    prompt = json.dumps([{"role": "user", "content": "{{output}} | {{rubric}} | {{extra}}"}])
    requests, _ = run(graders.llm_rubric(Assertion(type="llm-rubric"), None, '{"a": 1}', {"extra": "E"}, prompt),
                      '{"pass": true}')
    assert requests[0].messages == [{"role": "user", "content": '{"a":1} |  | E'}]
    text_prompt = "Grade: {{ output }}"  # not JSON: one user message
    requests, _ = run(graders.llm_rubric(Assertion(type="llm-rubric"), "r", "out", {}, text_prompt), '{"pass": 1}')
    assert requests[0].messages == [{"role": "user", "content": "Grade: out"}]


@pytest.mark.parametrize("reply, passed, score, reason", [
    ('{"reason": "ok", "pass": true, "score": 0.8}', True, 0.8, "ok"),
    ('{"reason": "no", "pass": false, "score": 0}', False, 0.0, "no"),
    ('{"reason": "r"}', True, 1.0, "r"),  # pass defaults to true, score to Number(pass)
    ('{"pass": "yes"}', True, 1.0, "No reason provided"),  # non-boolean: /^(true|yes|pass|y)$/i
    ('{"pass": "Y", "score": "0.4"}', True, 0.4, "No reason provided"),  # Number("0.4")
    ('{"pass": "nope"}', False, 0.0, "No reason provided"),
    ('{"pass": false, "score": "abc"}', False, 0.0, "No reason provided"),  # not a number: Number(pass)
    ('{"pass": true, "score": null}', True, 0.0, "No reason provided"),  # Number(null) is 0
    ('Sure! {"reason": "fine", "pass": true, "score": 1} {"pass": false}', True, 1.0, "fine"),  # first object
])
def test_rubric_reply_parsing(reply, passed, score, reason):
    result = graders.parse_rubric_reply(reply, Assertion(type="llm-rubric"))
    assert (result.passed, result.score, result.reason) == (passed, score, reason)


def test_rubric_threshold_negation_and_no_json():
    with_threshold = Assertion(type="llm-rubric", threshold=0.9)
    assert not graders.parse_rubric_reply('{"pass": true, "score": 0.8}', with_threshold).passed
    assert graders.parse_rubric_reply('{"pass": true, "score": 0.95}', with_threshold).passed
    negated = graders.parse_rubric_reply('{"pass": true, "score": 0.8}', Assertion(type="not-llm-rubric"))
    assert not negated.passed and negated.score == pytest.approx(0.2)
    flipped = graders.parse_rubric_reply('{"pass": false, "score": 0}', Assertion(type="not-llm-rubric"))
    assert flipped.passed and flipped.score == 1.0
    no_json = graders.parse_rubric_reply("I think it passes", Assertion(type="not-llm-rubric"))
    assert not no_json.passed and no_json.reason.startswith("Could not extract JSON")  # fails even under not-


def test_judge_error_raises():
    flow = graders.llm_rubric(Assertion(type="llm-rubric"), "r", "out", {}, None)
    next(flow)
    with pytest.raises(CheckError, match="refused"):
        flow.send(JudgeReply(error="connection refused"))


def test_factuality():
    assertion = Assertion(type="factuality", value="Paris is the capital of France")
    requests, result = run(graders.factuality(assertion, assertion.value, "Paris.", "Capital of France?", {}, None,
                                              None), '{"category": "A", "reason": "subset"}')
    user = requests[0].messages[1]["content"]
    assert "<question>\nCapital of France?\n</question>" in user
    assert "<expert_answer>\nParis is the capital of France\n</expert_answer>" in user
    assert "<submitted_answer>\nParis.\n</submitted_answer>" in user
    assert requests[0].json_schema["properties"]["category"] == {"enum": ["A", "B", "C", "D", "E"]}
    assert (result.passed, result.score, result.reason) == (True, 1.0, "subset")


@pytest.mark.parametrize("reply, overrides, passed, score", [
    ('{"category": "D", "reason": "contradicts"}', None, False, 0.0),
    ('{"category": "e", "reason": "same facts"}', None, True, 1.0),
    ('{"category": "B", "reason": "more"}', {"superset": 0}, False, 0.0),
    ('{"category": "D", "reason": "x"}', {"disagree": 0.5}, True, 0.5),
    ("(C) They agree.", None, True, 1.0),  # legacy format
    ('{"category": "Z", "reason": "x"}', None, False, 0.0),
    ("no idea", None, False, 0.0),
])
def test_factuality_parsing(reply, overrides, passed, score):
    result = graders.parse_factuality_reply(reply, Assertion(type="factuality"), overrides)
    assert (result.passed, result.score) == (passed, score)


def test_factuality_reasons():
    assert graders.parse_factuality_reply("(C) They agree.", Assertion(type="factuality"), None).reason == \
        "They agree."
    assert graders.parse_factuality_reply('{"category": "Z"}', Assertion(type="factuality"), None).reason == \
        "Invalid category value: Z"


def test_g_eval_two_calls_and_score_over_ten():
    assertion = Assertion(type="g-eval", value="is polite")
    requests, result = run(graders.g_eval(assertion, "is polite", "Thanks!", "Say thanks", None),
                           '{"steps": ["Check tone", "Check thanks"]}', '{"score": 8, "reason": "polite"}')
    assert "is polite" in requests[0].messages[0]["content"] and requests[0].json_schema == graders.STEPS_SCHEMA
    evaluate = requests[1].messages[0]["content"]
    assert "- Check tone\n- Check thanks" in evaluate and "Source Text:\nSay thanks" in evaluate
    assert "Reply:\nThanks!" in evaluate
    assert (result.passed, result.score, result.reason) == (True, 0.8, "polite")
    low = run(graders.g_eval(assertion, "is polite", "x", "y", None), '{"steps": ["a"]}', '{"score": 6}')[1]
    assert not low.passed and low.score == 0.6  # default threshold 0.7
    custom = Assertion(type="g-eval", value="c", threshold=0.5)
    assert run(graders.g_eval(custom, "c", "x", "y", None), '{"steps": ["a"]}', '{"score": 6}')[1].passed


def test_g_eval_list_is_averaged_and_bad_steps_fail():
    assertion = Assertion(type="g-eval", value=["a", "b"])
    _, result = run(graders.g_eval(assertion, ["a", "b"], "x", "y", None), '{"steps": ["s"]}', '{"score": 10}',
                    '{"steps": ["s"]}', '{"score": 4}')
    assert result.score == pytest.approx(0.7) and result.passed
    _, empty = run(graders.g_eval(Assertion(type="g-eval"), "c", "x", "y", None), '{"steps": []}')
    assert not empty.passed and empty.reason == "LLM does not propose any evaluation step"
    with pytest.raises(CheckError, match="No source text"):
        next(graders.g_eval(Assertion(type="g-eval"), "c", "x", "", None))


def test_select_best():
    request = graders.select_best_request("most polite", ["a", "b", "c"], {}, None)
    text = request.messages[0]["content"]
    assert '<Text index="0">\na\n</Text>' in text and '<Text index="2">\nc\n</Text>' in text
    assert "criteria: most polite" in text and request.json_schema == {"type": "integer", "minimum": 0, "maximum": 2}
    verdicts = graders.parse_select_best("1", 3, "most polite", Assertion(type="select-best"))
    assert [v.passed for v in verdicts] == [False, True, False] and [v.score for v in verdicts] == [0, 1, 0]
    assert verdicts[1].reason == "Output selected as the best: most polite"
    assert verdicts[0].reason == "Output not selected: most polite"
    assert [v.passed for v in graders.parse_select_best("Text 2 is best", 3, "c", Assertion(type="select-best"))] \
        == [False, False, True]
    bad = graders.parse_select_best("7", 3, "c", Assertion(type="select-best"))
    assert not any(v.passed for v in bad) and bad[0].reason == "Invalid select-best verdict: 7"
    assert graders.parse_select_best("none", 2, "c", Assertion(type="select-best"))[0].reason == \
        "Invalid select-best verdict: NaN"
