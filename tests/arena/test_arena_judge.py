"""A judge's pairwise vote: a blind request constrained by a JSON schema, and its reply read back as a Vote —
on written replies, and on real replies of the embedded model through the real engine."""

import dataclasses
import json

import jsonschema
import pytest

from app.arena import VERDICT_SCHEMA, JudgeReplyError, JudgeTask, judge_request, parse_judge_reply
from app.arena.judge import parse_verdict

TASK = JudgeTask("key-a", "key-b", "The capital of France is Paris.", "The capital of France is Berlin.",
                 case_id="q1", case_text="What is the capital of France?", a_label="T 0 · seed 1",
                 b_label="SmolLM2 T 0.7")


def test_the_request_is_blind_and_constrained():
    request = judge_request(TASK)
    text = json.dumps(request.messages)
    for secret in ("key-a", "key-b", "T 0 · seed 1", "SmolLM2 T 0.7"):
        assert secret not in text
    user = request.messages[-1]["content"]
    assert user.index("Paris") < user.index("Berlin")  # a is text 0
    assert '<Text index="0">' in user and "What is the capital of France?" in user
    assert request.json_schema == VERDICT_SCHEMA and request.sampling.temperature == 0
    swapped = judge_request(TASK.swapped()).messages[-1]["content"]
    assert swapped.index("Berlin") < swapped.index("Paris")
    assert TASK.swapped().a == "key-b" and TASK.swapped().a_label == "SmolLM2 T 0.7"


@pytest.mark.parametrize(("reply", "winner"), [
    ('{"reason": "Paris is right.", "best": 0}', "a"),
    ('{"reason": "r", "best": 1}', "b"),
    ('{"reason": "r", "best": "tie"}', "tie"),
    ('{"reason": "r", "best": "both_bad"}', "both_bad"),
    ('Sure! Here it is: {"reason": "r", "best": "1"} Hope that helps.', "b"),
    ('{"verdict": "A"}', "a"),
    ('{"winner": "both bad"}', "both_bad"),
    ("I choose text 1 because it is longer.", "b"),  # promptfoo select-best: the first integer
    ('{"best": true} then 0', "a"),
])
def test_verdicts_are_read_from_json_or_a_first_index(reply, winner):
    assert parse_verdict(reply)[0] == winner


@pytest.mark.parametrize("reply", ["", "Both are fine.", "Text 2 is best.", '{"best": 5}', '{"reason": "cut off'])
def test_a_reply_without_a_verdict_is_refused_with_its_start_quoted(reply):
    with pytest.raises(JudgeReplyError, match="empty" if not reply else "names no verdict"):
        parse_judge_reply(TASK, reply, judge="J")


def test_the_vote_carries_the_pair_the_case_and_the_reason():
    vote = parse_judge_reply(TASK, '{"reason": "Paris is the capital.", "best": 0}', judge="SmolLM2", id="v1")
    assert (vote.a, vote.b, vote.winner, vote.winner_key) == ("key-a", "key-b", "a", "key-a")
    assert (vote.source, vote.judge, vote.id) == ("judge", "SmolLM2", "v1")
    assert (vote.case_id, vote.case_text, vote.note) == ("q1", "What is the capital of France?",
                                                        "Paris is the capital.")
    assert (vote.a_label, vote.b_label) == ("T 0 · seed 1", "SmolLM2 T 0.7")


CASES = [TASK, JudgeTask("k1", "k2", "2 + 2 = 4.", "I like turtles.", case_id="q2", case_text="What is 2 + 2?")]


@pytest.mark.timeout(600)  # six prompts of ~250 tokens on a shared 2-core machine
def test_real_judge_replies_of_the_embedded_model_parse_into_votes(make_engine):
    """Both orders of two pairs through the real engine: every constrained reply is JSON that matches the
    schema and becomes a judge Vote for the verdict it states. Unconstrained replies of the same model either
    parse or are refused with a message quoting them (a 135M model rarely writes the JSON unaided)."""
    engine = make_engine(n_slots=4)
    tasks = [t for task in CASES for t in (task, task.swapped())]
    constrained = [(t, engine.submit(judge_request(t))) for t in tasks]
    free = [(t, engine.submit(dataclasses.replace(judge_request(t, max_tokens=40), json_schema=None)))
            for t in CASES]
    for task, handle in constrained:
        completion = handle.result(timeout=300)
        assert completion.finish_reason == "stop", completion.text
        reply = json.loads(completion.text)
        jsonschema.validate(reply, VERDICT_SCHEMA)
        vote = parse_judge_reply(task, completion.text, judge="SmolLM2-135M")
        expected = {0: "a", 1: "b"}.get(reply["best"], reply["best"])
        assert vote.winner == expected and vote.source == "judge" and vote.note == reply["reason"].strip()
        assert (vote.a, vote.b, vote.case_id) == (task.a, task.b, task.case_id)
    for task, handle in free:
        completion = handle.result(timeout=300)
        assert completion.finish_reason in ("stop", "length")
        try:
            vote = parse_judge_reply(task, completion.text, judge="SmolLM2-135M")
        except JudgeReplyError as e:
            assert repr(completion.text.strip()[:40])[1:-1] in str(e)
        else:
            assert vote.winner in ("a", "b", "tie", "both_bad")
