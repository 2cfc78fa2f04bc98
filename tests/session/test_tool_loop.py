"""The tool loop: mock results checked as written, call cards (valid, unknown, invalid, unanswered), the calls and
results saved in the session file, Continue refusing what it cannot answer (nothing submitted), and on the real
model: the results rendered in the template's own tool-response format, and four panes' next steps decoded in
the same engine steps."""

import json
import re

import pytest

from app.engine import SamplingParams
from app.session import PaneSpec, SessionController, SessionModel, SessionRunner, conversation, tool_loop
from app.session.mocks import MockError, parse_mocks
from app.session.schema import pane_from_file, pane_to_file
from app.session.tool_cards import INVALID, NOT_JSON, UNKNOWN, VALID, cards_for, f1
from tests.conftest import EngineSubmitter, drive

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TOOLS = json.dumps([WEATHER])
MOCKS = json.dumps({"get_weather": {"cases": [{"when": {"city": "Paris"}, "result": {"temp_c": 18}}],
                                    "result": {"temp_c": 25}}})


def call(name="get_weather", arguments='{"city": "Paris"}', id_="call_1"):
    return {"id": id_, "name": name, "arguments": arguments}


def waiting_pane(calls, mocks=MOCKS, tools=TOOLS, question="Weather in Paris?"):
    """A pane whose last reply made `calls` (as a run records it), waiting for their results."""
    return PaneSpec(tools=tools, mocks=mocks, sampling=SamplingParams(temperature=0), max_tokens=16,
                    turns=[{"role": "user", "content": question},
                           {"role": "assistant", "content": "", "tool_calls": calls}])


@pytest.mark.parametrize(("text", "message"), [
    ("{", r"mock results: not JSON \(.* at line 1, column 2\)"),
    ("[]", "mock results: must be a JSON object with a key per tool, got list"),
    ('{"get_time": {"result": 1}}', r"'get_time' is not one of the pane's tools \(get_weather\)"),
    ('{"get_weather": 3}', r"'get_weather' must be \{\"result\": ...\}"),
    ('{"get_weather": {"answer": 3}}', r"'get_weather' must be \{\"result\": ...\}"),
    ('{"get_weather": {"cases": {}}}', "\"cases\" must be a list"),
    ('{"get_weather": {"cases": [{"when": "Paris", "result": 1}]}}', "case 1 must be"),
])
def test_bad_mock_results_are_refused_with_a_message_naming_the_tool_and_field(text, message):
    with pytest.raises(MockError, match=message):
        parse_mocks(text, ["get_weather"])


def test_mock_results_answer_by_matching_arguments_then_the_default():
    mock = parse_mocks(MOCKS)["get_weather"]
    assert mock.answer({"city": "Paris", "units": "C"}) == '{"temp_c": 18}'
    assert mock.answer({"city": "Rome"}) == '{"temp_c": 25}'
    only_cases = parse_mocks('{"f": {"cases": [{"when": {"x": 1}, "result": "one"}]}}')["f"]
    assert only_cases.answer({"x": 1}) == "one" and only_cases.answer({"x": 2}) is None


def test_cards_say_whether_each_call_validates_and_what_answers_it():
    cards = cards_for([call(), call(arguments='{"city": 3}'), call("get_time"), call(arguments="{city"),
                       call(arguments='{"city": "Oslo"}')], TOOLS, MOCKS)
    assert [c.status for c in cards] == [VALID, INVALID, UNKNOWN, NOT_JSON, VALID]
    assert cards[0].answer == '{"temp_c": 18}' and cards[0].pretty == '{\n  "city": "Paris"\n}'
    assert cards[4].answer == '{"temp_c": 25}'
    assert all(c.answer is None for c in cards[1:4])
    assert "3 is not of type 'string'" in cards[1].problem and "(at city)" in cards[1].problem
    assert "'get_time' is not one of the pane's tools (get_weather)" in cards[2].problem
    assert "not JSON" in cards[3].problem
    unanswered = cards_for([call()], TOOLS, "")[0]
    assert unanswered.valid and unanswered.answer is None and "no mock result for get_weather" in unanswered.problem
    bad_mocks = cards_for([call()], TOOLS, "{")[0]
    assert bad_mocks.answer is None and "mock results: not JSON" in bad_mocks.problem
    assert f1({"get_weather"}, {"get_weather", "get_time"}) == pytest.approx(2 / 3) and f1(set(), set()) is None


class Recorder:
    def __init__(self):
        self.submitted = []

    def submit(self, request, _backend):
        self.submitted.append(request)
        raise RuntimeError("not expected to be submitted")

    def get(self, _backend):
        return None


@pytest.mark.parametrize(("calls", "mocks", "tools", "message"), [
    ([call()], "{", TOOLS, "call 1 \\(get_weather\\) is not answered: mock results: not JSON"),
    ([call(), call("get_time")], MOCKS, TOOLS, "call 2 \\(get_time\\) is not answered: 'get_time' is not one"),
    ([call(arguments='{"town": "Paris"}')], MOCKS, TOOLS, "call 1 .*'city' is a required property"),
    ([call()], json.dumps({"get_weather": {"cases": []}}), TOOLS, "no mock case of get_weather matches"),
    ([call()], MOCKS, "[", "tools: not JSON"),
])
def test_continue_refuses_what_it_cannot_answer_and_submits_nothing(calls, mocks, tools, message):
    recorder = Recorder()
    session = SessionModel()
    controller = SessionController(session, SessionRunner(recorder))
    pane = session.adopt(waiting_pane(calls, mocks, tools))
    before = [dict(t) for t in pane.turns]
    report = controller.continue_tools([pane])
    assert report.started == 0 and len(report.problems) == 1, report
    assert report.problems[0][0] is pane
    assert re.search(message, report.problems[0][1]), report.problems[0][1]
    assert recorder.submitted == [] and pane.turns == before
    loop = controller.auto_continue([pane], steps=3)
    assert loop.done and loop.rounds == 0 and re.search(message, loop.stopped[pane.id])
    assert recorder.submitted == [] and pane.turns == before


def test_calls_and_results_are_saved_in_the_session_file_and_sent_as_openai_messages():
    pane = waiting_pane([call()])
    tool_loop.continue_pane(pane)
    assert pane.turns[-1] == {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": "call_1",
                              "name": "get_weather"}
    card = tool_loop.cards(pane)[0]
    assert card.answered and card.answer == '{"temp_c": 18}' and tool_loop.pending_calls(pane) == []
    back = pane_from_file(pane_to_file(pane))
    assert back.turns == pane.turns and back.mocks == MOCKS
    request, _ = conversation.plan_run(back, use_draft=False)  # a tool turn last: the model goes on
    assert request.messages[1] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert request.messages[2] == {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": "call_1"}


@pytest.fixture
def qwen_engine(make_engine, qwen_variant):
    return make_engine(model_path=qwen_variant, n_slots=4)


def test_four_panes_continue_together_in_the_same_engine_steps(qwen_engine):
    """Four panes waiting with calls: Continue answers them from their mocks, the engine renders the results in
    the template's <tool_response> format, and the four next turns are decoded in the same steps."""
    session = SessionModel()
    runner = SessionRunner(EngineSubmitter(qwen_engine))
    qwen_engine.subscribe(runner.feed)
    controller = SessionController(session, runner)
    cities = ["Paris", "Rome", "Oslo", "Lima"]
    panes = [session.adopt(waiting_pane([call(arguments=json.dumps({"city": c}), id_=f"call_{c}")],
                                        question=f"Weather in {c}?")) for c in cities]
    steps: list[set] = []
    qwen_engine.subscribe(lambda event: steps.append(set(event.tokens)))
    report = controller.continue_tools(panes)
    assert report.started == 4 and not report.problems, report
    rendered = qwen_engine.render_prompt(conversation.plan_run(panes[0], use_draft=False)[0])
    assert ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in rendered
            and '<tool_response>\n{"temp_c": 18}\n</tool_response>' in rendered), rendered
    drive(runner)
    assert all(p.result.finish_reason in ("stop", "length") and p.result.generated_tokens > 0 for p in panes)
    assert [t["role"] for t in panes[1].turns] == ["user", "assistant", "tool", "assistant"]
    assert panes[1].turns[2]["content"] == '{"temp_c": 25}'  # Rome: the default result
    together = [s for s in steps if len(s) == 4]
    assert len(together) >= 4, f"steps decoding all four: {len(together)} of {len(steps)}"
    assert qwen_engine.stats().avg_concurrent > 1


def test_the_comparison_table_shows_calls_validity_and_f1_and_the_diff_shows_calls_as_calls():
    from app.session import table
    from app.session.tool_cards import reply_text

    good, mixed, none = (waiting_pane(calls) for calls in (
        [call()], [call(arguments='{"city": 1}'), call("get_time", "{}")], []))
    for pane in (good, mixed, none):
        pane.result.tool_calls = pane.turns[-1]["tool_calls"]
    good.expected_calls = "get_weather, get_time"
    rows = table.rows([good, mixed, none], reference=good)
    assert rows[0]["tool calls"] == 'get_weather({"city": "Paris"})' and rows[0]["valid"] == 1.0
    assert rows[0]["F1 vs expected"] == pytest.approx(2 / 3)  # the pane's own expected calls
    assert rows[1]["tool calls"] == 'get_weather({"city": 1}); get_time({})' and rows[1]["valid"] == 0.0
    assert rows[1]["F1 vs expected"] == pytest.approx(2 / 3)  # vs the reference pane's calls: get_weather
    assert rows[2]["valid"] is None and rows[2]["F1 vs expected"] == 0.0 and rows[2]["tool calls"] == ""
    assert [r["id"] for r in table.sort(rows, "valid", descending=True)] == [good.id, mixed.id, none.id]
    assert "tool calls,valid,F1 vs expected" in table.to_csv(rows).splitlines()[0]
    good.result.text = "Let me look."
    assert reply_text(good.result) == 'Let me look.\n→ get_weather({"city": "Paris"})'


def test_a_sweep_over_tool_sets_labels_each_pane_by_its_tools_and_refuses_a_bad_set():
    from app.session import compare, sweep

    time_tool = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    panes = sweep.expand(PaneSpec(draft="Weather?"), {"tools": [[WEATHER], [WEATHER, time_tool], ""]})
    assert [json.loads(p.tools) if p.tools else [] for p in panes] == [[WEATHER], [WEATHER, time_tool], []]
    assert [d["tools"] for d in compare.coordinates([compare.settings_of(p) for p in panes])] == [
        "get_weather", "get_weather, get_time", "none"]
    with pytest.raises(ValueError, match="tools = .*tool 1: \"type\" must be \"function\""):
        sweep.expand(PaneSpec(), {"tools": [[{"type": "tool"}]]})


def test_a_multi_step_loop_on_the_local_model_in_four_panes_at_once(qwen_engine):
    """The real model calls (its reply parsed as llama.cpp parses Hermes/Qwen calls), auto-continue answers each
    pane's call from its mocks and the four next turns run in the same engine steps. The 135M model calls only
    when its reply starts inside the call (a reply prefix; no grammar on the local engine yet)."""
    session = SessionModel()
    runner = SessionRunner(EngineSubmitter(qwen_engine))
    qwen_engine.subscribe(runner.feed)
    controller = SessionController(session, runner)
    prefix = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "'
    panes = [session.adopt(PaneSpec(turns=[{"role": "user", "content": f"What is the weather in {city}?"}],
                                    tools=TOOLS, mocks=MOCKS, reply_prefix=prefix, group="trip", max_tokens=24,
                                    sampling=SamplingParams(temperature=0)))
             for city in ("Paris", "Rome", "Oslo", "Lima")]
    assert controller.run_many(panes).started == 4
    drive(runner)
    for pane in panes:
        assert pane.result.finish_reason in ("tool_calls", "length") and len(pane.result.tool_calls) == 1, pane.result
        assert pane.turns[-1]["tool_calls"] == pane.result.tool_calls  # its content: any text after the call
        assert "<tool_call>" not in pane.turns[-1]["content"]
        assert [c.status for c in tool_loop.cards(pane)] == [VALID]
    steps: list[set] = []
    qwen_engine.subscribe(lambda event: steps.append(set(event.tokens)))
    loop = controller.auto_continue(panes, steps=2)
    assert loop.rounds == 1 and all(p.result.busy for p in panes)  # the four steps were submitted together
    drive(runner)
    assert loop.done and loop.rounds >= 1, (loop.rounds, loop.stopped)
    for pane in panes:
        assert [t["role"] for t in pane.turns][:4] == ["user", "assistant", "tool", "assistant"], pane.turns
        assert pane.turns[2]["content"] in ('{"temp_c": 18}', '{"temp_c": 25}')
    # Submitted together (all four busy above); the shortest next turns end within a few tokens, while the
    # prompts of the others are still being prefilled, so at most three decode in one step here.
    assert max(len(s) for s in steps) >= 3, f"requests decoded per step: {[len(s) for s in steps]}"
