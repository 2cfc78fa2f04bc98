"""Tools on a pane: the checks on their JSON, a pane with bad tools submitting nothing, the session file, and the
local engine showing tools to the model (and saying once that it does not parse calls yet)."""

import json

import pytest

from app.engine import SamplingParams
from app.engine.types import TOOLS_AS_TEXT
from app.session import PaneResult, PaneSpec, SessionRunner, conversation
from app.session.schema import pane_from_file, pane_to_file
from app.session.tools import ToolsError, check_tool_choice, parse_tools, request_fields
from tests.conftest import EngineSubmitter, drive

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def fn(name, **extra):
    return {"type": "function", "function": {"name": name, **extra}}


@pytest.mark.parametrize(("text", "message"), [
    ("[{", r"tools: not JSON \(.* at line 1, column 3\)"),
    ('{"type": "function"}', "tools: must be a JSON list of function definitions, got dict"),
    ("[1]", "tool 1: must be an object"),
    (json.dumps([{"type": "tool", "function": {"name": "a"}}]), "tool 1: \"type\" must be \"function\", got 'tool'"),
    (json.dumps([{"type": "function"}]), "tool 1: \"function\" must be an object"),
    (json.dumps([fn("has space")]), "tool 1: function.name must be 1-64 letters"),
    (json.dumps([WEATHER, fn("get_weather")]),
     "tool 2 \\(get_weather\\): the name 'get_weather' is also tool 1's; names must be unique"),
    (json.dumps([fn("a", description=3)]), r"tool 1 \(a\): function.description must be a string"),
    (json.dumps([fn("a", parameters=[])]), r"tool 1 \(a\): function.parameters must be a JSON Schema object"),
    (json.dumps([WEATHER, fn("b", parameters={"type": "objekt"})]),
     r"tool 2 \(b\): function.parameters is not a valid JSON Schema \(at type\): 'objekt' is not valid"),
])
def test_bad_tools_are_refused_with_a_message_naming_the_tool_and_field(text, message):
    with pytest.raises(ToolsError, match=message):
        parse_tools(text)


def test_good_tools_parse_and_tool_choice_must_name_one_of_them():
    tools = parse_tools(json.dumps([WEATHER, fn("now")]))  # parameters may be left out
    assert [t["function"]["name"] for t in tools] == ["get_weather", "now"] and parse_tools("  ") == []
    assert check_tool_choice("now", tools) == "now" and check_tool_choice("required", tools) == "required"
    with pytest.raises(ToolsError, match="'later' is not auto, none, required or a tool's name"):
        check_tool_choice("later", tools)
    with pytest.raises(ToolsError, match="needs tools, and the pane has none"):
        request_fields("", "required", None)
    assert request_fields(json.dumps([WEATHER]), "auto", False) == {
        "tools": (WEATHER,), "tool_choice": "auto", "parallel_tool_calls": False}


def test_a_pane_with_bad_tools_submits_nothing_and_says_why():
    submitted = []

    class Recorder:
        def submit(self, request, _backend):
            submitted.append(request)

    pane = PaneSpec(draft="Weather in Paris?", tools=json.dumps([WEATHER, WEATHER]))
    with pytest.raises(ValueError, match="names must be unique"):
        SessionRunner(Recorder()).run(pane)
    assert submitted == [] and pane.draft == "Weather in Paris?" and pane.turns == []


def test_tools_are_saved_in_the_session_file_and_old_files_still_load():
    pane = PaneSpec(tools=json.dumps([WEATHER]), tool_choice="get_weather", parallel_tool_calls=False)
    back = pane_from_file(pane_to_file(pane))
    assert (back.tools, back.tool_choice, back.parallel_tool_calls) == (pane.tools, "get_weather", False)
    old = pane_from_file(type(pane_to_file(PaneSpec()))())  # a pane from before tools: every field absent
    assert (old.tools, old.tool_choice, old.parallel_tool_calls) == ("", "auto", None)


def test_the_local_engine_shows_the_tools_to_the_model_and_parses_its_reply(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant)
    pane = PaneSpec(draft="Weather in Paris?", tools=json.dumps([WEATHER]), tool_choice="required",
                    sampling=SamplingParams(temperature=0), max_tokens=8)
    request, _ = conversation.plan_run(pane)
    assert "get_weather" in engine.render_prompt(request) and "<tools>" in engine.render_prompt(request)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    runner.run(pane)
    drive(runner)
    # Qwen2.5's template has a call format (app/engine/chat/parse): no "shown as text" note; 8 tokens hold no call.
    assert TOOLS_AS_TEXT not in pane.result.backend_note and TOOLS_AS_TEXT not in pane.result.summary()
    assert pane.result.tool_calls == [] and pane.result.finish_reason == "length"


def test_call_first_is_saved_with_the_pane_and_its_versions_and_sent_to_the_engine():
    from app.session import SessionModel, versions
    from app.session.store import decode, encode

    pane = PaneSpec(draft="Weather in Paris?", tools=json.dumps([WEATHER]), tool_choice="required",
                    tool_call_first=True)
    versions.begin(pane, [{"role": "user", "content": "Weather in Paris?"}], PaneResult())
    back = decode(encode(SessionModel(panes=[pane])))["panes"][0]
    assert back.tool_call_first is True and back.tool_choice == "required"
    assert back.versions[0].settings["tool_call_first"] is True  # the settings a run had (a branch copies them)
    assert pane_from_file(type(pane_to_file(PaneSpec()))()).tool_call_first is False  # older files: off
    request, _ = conversation.plan_run(back)
    assert request.tool_call_first is True and request.tool_choice == "required"
    assert conversation.plan_run(PaneSpec(draft="x", tools=json.dumps([WEATHER])))[0].tool_call_first is False


def test_required_with_call_first_makes_the_local_reply_start_with_the_call(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    panes = [PaneSpec(draft="What is the weather in Paris?", tools=json.dumps([WEATHER]), tool_choice="required",
                      tool_call_first=first, parallel_tool_calls=False, sampling=SamplingParams(temperature=0),
                      max_tokens=64)
             for first in (True, False)]
    for pane in panes:
        runner.run(pane)
    drive(runner)
    first, default = (p.result for p in panes)
    # the reply is the call: its content (the text outside the call markup) is empty, nothing came before it
    assert first.text == "" and first.finish_reason == "tool_calls", first
    assert [c["name"] for c in first.tool_calls] == ["get_weather"]
    assert json.loads(first.tool_calls[0]["arguments"])["city"]
    assert default.text.strip(), default  # llama-server's grammar (the default): SmolLM2 writes prose
