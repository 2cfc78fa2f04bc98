"""Output formats, branching from a token, and their round trip through a session file (no model needed)."""

import pytest

from app.engine import Completion
from app.engine.sampling.logprobs import TokenLogprob
from app.session import PaneSpec, Session, conversation
from app.session.output_format import OutputFormat, format_applied
from app.session.runner import SessionRunner

SCHEMA = '{"type": "object", "properties": {"a": {"enum": ["x", "y"]}}, "required": ["a"]}'


def entry(token_id: int, text: str, logprob: float) -> TokenLogprob:
    return TokenLogprob(token_id, text, logprob, ((token_id, text, logprob), (99, " other", logprob - 1.0)))


def answered_pane() -> PaneSpec:
    pane = PaneSpec(turns=[{"role": "user", "content": "Capital of France?"},
                           {"role": "assistant", "content": "It is Paris."}])
    pane.result.text = "It is Paris."
    pane.result.token_logprobs = [entry(1, "It", -0.1), entry(2, " is", -0.2), entry(3, " Paris", -0.9),
                                  entry(4, ".", -0.05)]
    return pane


def test_formats_become_request_fields_and_check_outputs():
    assert OutputFormat().request_fields() == {}
    assert OutputFormat("json").request_fields() == {"json_schema": {}}
    assert OutputFormat("schema", SCHEMA).request_fields()["json_schema"]["required"] == ["a"]
    assert OutputFormat("grammar", 'root ::= "a"').request_fields() == {"grammar": 'root ::= "a"'}
    assert OutputFormat("json").check_output('{"b": 1}') == "✓ valid JSON"
    assert OutputFormat("json").check_output("{nope").startswith("✗ not valid JSON")
    assert OutputFormat("schema", SCHEMA).check_output('{"a": "x"}') == "✓ valid JSON, matches the schema"
    assert "not valid against the schema" in OutputFormat("schema", SCHEMA).check_output('{"a": "z"}')


GRAMMAR = OutputFormat("grammar", 'root ::= "yes" | "no"')


def test_every_verdict_is_honest_about_what_was_checked():
    # A grammar is never said to match: only that the backend constrained a reply that finished.
    assert GRAMMAR.check_output("yes", "stop") == "constrained by the grammar; not re-checked"
    assert "match" not in GRAMMAR.check_output("yes", "stop")
    assert GRAMMAR.check_output("ye", "length") == "✗ cut off (finish: length): not complete"
    assert GRAMMAR.check_output("", "cancelled") == "✗ cut off (finish: cancelled): not complete"
    ignored = GRAMMAR.check_output("maybe", "stop", applied=False)
    assert ignored.startswith("✗ not constrained") and "did not apply the grammar" in ignored
    # JSON is checked whatever happened; a cut-off reply that does not parse says why it is incomplete.
    schema = OutputFormat("schema", SCHEMA)
    cut = schema.check_output('{"a": "x', "length")
    assert cut.startswith("✗ cut off (finish: length): not complete (not valid JSON")
    assert schema.check_output('{"a": "x"}', "length") == "✓ valid JSON, matches the schema"  # complete anyway
    unapplied = schema.check_output('{"a": "z"}', "stop", applied=False)
    assert "not valid against the schema" in unapplied and "did not apply the json schema" in unapplied
    assert OutputFormat("json").check_output("NaN").startswith("✗ not valid JSON")  # Python's json says yes
    assert OutputFormat("json").check_output("{}", "error") == "not checked: the run failed"
    assert OutputFormat().check_output("anything", "length") == ""


def test_the_backend_saying_it_ignored_the_format_reaches_the_verdict():
    def completion(unapplied):
        return Completion(request_id=1, text="maybe", token_ids=[], finish_reason="stop", error=None,
                          prompt_tokens=3, generated_tokens=1, queue_wait_s=0.0, ttft_s=0.1, decode_tps=None,
                          unapplied=unapplied)

    assert format_applied(completion(())) and format_applied(completion(("top_k",)))
    assert not format_applied(completion(("top_k", "grammar")))
    assert not format_applied(completion(("json_schema",)))


@pytest.mark.parametrize("fmt, words", [
    (OutputFormat("schema", "{not json"), "not JSON"),
    (OutputFormat("schema", "[1]"), "must be a JSON object"),
    (OutputFormat("schema", '{"type": 5}'), "not a valid JSON schema"),
    (OutputFormat("grammar", "  "), "empty"),
])
def test_format_problems_name_what_is_wrong(fmt, words):
    assert words in fmt.problem()
    with pytest.raises(ValueError):
        OutputFormat("yaml")


def test_branch_replays_the_reply_up_to_the_token_and_continues_from_the_chosen_one():
    pane = answered_pane()
    branched = conversation.branch(pane, 2, " Lyon")
    assert branched.turns == [{"role": "user", "content": "Capital of France?"}]
    assert branched.reply_prefix == "It is Lyon" and branched.id != pane.id and "Lyon" in branched.title
    request, turns = conversation.plan_run(branched)
    assert request.reply_prefix == "It is Lyon" and turns == branched.turns
    with pytest.raises(ValueError, match="token 9"):
        conversation.branch(pane, 8, "x")


def test_a_branch_run_starts_its_reply_with_the_prefix_and_records_the_whole_reply():
    branched = conversation.branch(answered_pane(), 2, " Lyon")
    branched.show_probabilities = True
    submitted = []

    class Handle:
        id, t_submit = 7, 0.0

    class Recorder:
        def submit(self, request, _backend):
            submitted.append(request)
            return Handle()

    runner = SessionRunner(Recorder())
    runner.run(branched)
    assert submitted[0].logprobs > 0 and branched.reply_prefix == "" and branched.result.text == "It is Lyon"
    from app.engine import StepEvent

    done = Completion(request_id=7, text=".", token_ids=[4], finish_reason="stop", error=None, prompt_tokens=9,
                      generated_tokens=1, queue_wait_s=0.0, ttft_s=0.1, decode_tps=None,
                      token_logprobs=[entry(4, ".", -0.01)])
    runner.apply(StepEvent(step=1, deltas={7: "."}, states={}, finished=[done], logprobs={7: [entry(4, ".", -0.01)]}))
    assert branched.turns[-1] == {"role": "assistant", "content": "It is Lyon."}
    assert branched.result.text == "It is Lyon." and len(branched.result.token_logprobs) == 1


def test_probabilities_format_and_prefix_survive_a_session_file(tmp_path):
    pane = answered_pane()
    pane.show_probabilities, pane.output_format = True, OutputFormat("schema", SCHEMA)
    branched = conversation.branch(pane, 1, " was")
    path = tmp_path / "s.chorus.json"
    Session([pane, branched]).save(path)
    loaded = Session.load(path)
    assert loaded.panes[0].result.token_logprobs == pane.result.token_logprobs
    assert loaded.panes[0].output_format == pane.output_format and loaded.panes[0].show_probabilities
    assert loaded.panes[1].reply_prefix == "It was"
