"""A pane's conversation: what Run sends, the edits, and a real two-turn exchange through the runner."""


import pytest

from app.engine import SamplingParams
from app.session import PaneResult, PaneSpec, RunState, Session, SessionRunner, conversation
from app.session.conversation import NothingToRun
from tests.conftest import EngineSubmitter, drive
from tests.fixtures.step_gate import StepGate

GREEDY = SamplingParams(temperature=0)


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


def test_run_sends_the_draft_as_the_next_turn_or_regenerates_the_last_reply():
    pane = PaneSpec(system="Be brief.", draft="  Hello?  ")
    request, turns = conversation.plan_run(pane)
    assert request.messages == [{"role": "system", "content": "Be brief."}, user("Hello?")]
    assert pane.turns == [] and pane.draft == "  Hello?  "  # planning changes nothing
    conversation.commit_run(pane, turns)
    assert pane.turns == [user("Hello?")] and pane.draft == ""
    pane.turns.append(assistant("Hi."))
    request, _ = conversation.plan_run(pane)  # no draft: regenerate the reply to "Hello?"
    assert request.messages[-1] == user("Hello?")
    pane.draft = "kept"
    request, turns = conversation.plan_run(pane, use_draft=False)  # "Rerun last reply" leaves the draft alone
    conversation.commit_run(pane, turns, used_draft=False)
    assert request.messages[-1] == user("Hello?") and pane.draft == "kept"


def test_nothing_to_run_and_invalid_requests_leave_the_pane_unchanged():
    with pytest.raises(NothingToRun, match="Type a message first"):
        conversation.plan_run(PaneSpec(draft="   "))
    pane = PaneSpec(draft="x")
    pane.max_tokens = 0  # as a hand-edited file might have it
    with pytest.raises(ValueError, match="max_tokens"):
        conversation.plan_run(pane)
    assert pane.turns == [] and pane.draft == "x"


def test_edit_a_turn_replaces_it_and_everything_after():
    pane = PaneSpec(turns=[user("a"), assistant("A"), user("b"), assistant("B")])
    with pytest.raises(ValueError, match="not a user message"):
        conversation.start_edit(pane, 1)
    conversation.start_edit(pane, 0)
    assert pane.draft == "a" and pane.editing == 0
    pane.draft = "a, reworded"
    request, turns = conversation.plan_run(pane)
    assert request.messages == [user("a, reworded")]
    conversation.commit_run(pane, turns)
    assert pane.turns == [user("a, reworded")] and pane.editing is None


def test_drop_oldest_exchange_clear_and_record_reply():
    pane = PaneSpec(turns=[user("a"), assistant("A"), user("b")])
    assert conversation.drop_oldest_exchange(pane) == 2 and pane.turns == [user("b")]
    pane.result.text = "B (partial)"
    conversation.record_reply(pane)
    assert pane.turns == [user("b"), assistant("B (partial)")]
    conversation.record_reply(pane)  # only an unanswered turn gets a reply
    assert len(pane.turns) == 2
    conversation.clear(pane)
    assert pane.turns == [] and pane.result.state == RunState.IDLE


def test_two_turns_on_the_real_engine_carry_the_first_exchange(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=1024)
    first = "My name is Alice and I love astronomy. Please remember that."
    pane = PaneSpec(draft=first, sampling=GREEDY, max_tokens=40)
    session = Session(panes=[pane])
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    runner.run(pane)
    drive(runner)
    reply_one = pane.result.text
    assert pane.result.state == RunState.DONE and reply_one and pane.turns == [user(first), assistant(reply_one)]
    assert pane.result.ttft_s > 0 and pane.result.queue_wait_s >= 0  # the engine's own final figures

    pane.draft = "What is my name?"
    runner.run(pane)
    assert pane.result.state == RunState.QUEUED and pane.turns[-1] == user("What is my name?")
    drive(runner)
    second_prompt = engine._renderer.render(conversation.messages(pane)[:-1])
    # The second request's prompt is the whole conversation in the GGUF's own template.
    assert (f"<|im_start|>user\n{first}<|im_end|>\n<|im_start|>assistant\n{reply_one}<|im_end|>\n"
            "<|im_start|>user\nWhat is my name?<|im_end|>\n<|im_start|>assistant\n") in second_prompt
    assert pane.result.prompt_tokens > pane.result.generated_tokens + len(first.split())
    cold = PaneSpec(draft="What is my name?", sampling=GREEDY, max_tokens=40)
    session.adopt(cold)
    runner.run(cold)
    drive(runner)
    assert pane.turns[-1]["content"] != cold.result.text  # the first exchange shaped the second reply
    assert len(pane.turns) == 4


def test_runner_live_figures_share_the_engine_clock(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=512)
    pane = PaneSpec(draft="Write a short poem.", sampling=GREEDY, max_tokens=24)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    gate = StepGate()  # each step is pumped before the next: the live figure is seen however fast the machine
    engine.subscribe(gate.step)
    handle = runner.run(pane)
    live = {}
    while runner.active:
        runner.wait(60)
        runner.pump()
        if pane.result.busy and pane.result.ttft_s is not None:
            live.setdefault("ttft", pane.result.ttft_s)
        gate.allow()
    final = handle.result(timeout=10)
    # Live TTFT is read at the end of the step that sampled the first token (same clock), the final one at the
    # sampling itself: so the live figure can only be the later of the two, never from another clock.
    assert 0 < final.ttft_s <= live["ttft"]
    assert pane.result.ttft_s == final.ttft_s and pane.result.generated_tokens == final.generated_tokens


def test_a_panes_speculative_mode_reaches_the_request_and_the_file(tmp_path):
    pane = PaneSpec(draft="Repeat: one two three", speculative="auto")
    request, _ = conversation.plan_run(pane)
    assert request.speculative.mode == "auto"
    assert conversation.plan_run(PaneSpec(draft="x"))[0].speculative is None  # off by default
    Session(panes=[pane]).save(tmp_path / "s.chorus.json")
    assert Session.load(tmp_path / "s.chorus.json").panes[0].speculative == "auto"
    with pytest.raises(ValueError, match="speculative must be one of off, auto, on"):
        PaneSpec(speculative="fast")
    assert "7/10 drafted accepted" in PaneResult(drafted_tokens=10, accepted_tokens=7).summary()
    assert "drafted" not in PaneResult().summary()
