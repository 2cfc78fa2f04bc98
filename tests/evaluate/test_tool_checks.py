"""promptfoo's tool assertions on hand-made outputs (rules: docs/evaluate.md, "Tool calls"), and a config's
`config.tools` (inline or file://) and tool_choice."""

import json

import pytest
import yaml

from app.evaluate import load_config
from app.evaluate.checks import CheckError, Output, run_check
from app.evaluate.errors import ConfigError
from app.session.evaluation import Assertion

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}


def call(name, arguments):
    return {"id": "c", "name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}


def valid(*calls, text="", tools=(WEATHER, TIME)):
    return run_check(Assertion(type="is-valid-openai-tools-call"), None,
                     Output(text=text, tool_calls=tuple(calls), tools=tuple(tools)))


def test_is_valid_openai_tools_call_follows_promptfoos_rules():
    assert valid(call("get_weather", {"city": "Paris"})).passed
    assert valid(call("get_weather", {"city": "Paris"}), call("get_time", {})).passed
    missing = valid(call("get_weather", {}))
    assert not missing.passed and missing.reason.startswith('Call to "get_weather" does not match schema')
    unknown = valid(call("get_news", {}))
    assert not unknown.passed and unknown.reason == 'Called "get_news", but there is no function with that name'
    assert not valid(call("get_weather", "{city")).passed  # arguments that are not JSON
    text_only = valid(text="The weather in Paris is fine.")
    assert not text_only.passed and "did not return a valid-looking tools response" in text_only.reason
    # Without parsed calls, the text itself is read as OpenAI's tool_calls JSON, as promptfoo reads an output.
    written = [{"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]
    assert valid(text=json.dumps(written)).passed and valid(text=json.dumps({"tool_calls": written})).passed
    assert run_check(Assertion(type="not-is-valid-openai-tools-call"), None,
                     Output(text="", tool_calls=(call("get_weather", {"city": "Paris"}),),
                            tools=(WEATHER,))).passed  # promptfoo's handler ignores `not-`, as Chorus does
    with pytest.raises(CheckError, match="needs the provider's config.tools"):
        valid(call("get_weather", {"city": "Paris"}), tools=())


def f1(value, *calls, text="", threshold=None, kind="tool-call-f1"):
    return run_check(Assertion(type=kind, value=value, threshold=threshold), value,
                     Output(text=text, tool_calls=tuple(calls)))


def test_tool_call_f1_is_the_harmonic_mean_of_precision_and_recall_over_names():
    exact = f1(["get_weather"], call("get_weather", {}), call("get_weather", {}))  # repeats count once
    assert exact.passed and exact.score == 1.0
    half = f1("get_weather, get_time", call("get_weather", {}))  # precision 1, recall 0.5
    assert not half.passed and half.score == pytest.approx(2 / 3)
    assert half.reason.startswith("Tool Call F1 score 0.667 is below threshold 1. Expected: [get_time, get_weather]")
    assert f1("get_weather, get_time", call("get_weather", {}), threshold=0.6).passed
    extra = f1("get_weather", call("get_weather", {}), call("get_news", {}))  # precision 0.5, recall 1
    assert extra.score == pytest.approx(2 / 3)
    none = f1("get_weather", text="I cannot call tools.")
    assert none.score == 0 and "Called: [(none)]" in none.reason
    assert f1("get_weather", text=json.dumps({"tool_calls": [{"function": {"name": "get_weather"}}]})).passed
    assert f1("get_weather", call("get_news", {}), kind="not-tool-call-f1").passed
    mixed = 'I will call it.\n{"name": "get_weather", "arguments": {}}\nand {"name": "get_time"} inline'
    assert f1("get_weather", text=mixed).passed  # a block that starts a line counts; an inline one does not
    with pytest.raises(CheckError, match="at least one expected tool name"):
        f1(" , ")


def test_a_config_reads_tools_inline_or_from_a_file_and_checks_them(tmp_path):
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER, TIME]))
    data = {"prompts": ["{{q}}"], "tests": [{"vars": {"q": "Weather?"},
                                             "assert": [{"type": "tool-call-f1", "value": ["get_weather"]},
                                                        {"type": "is-valid-openai-tools-call"}]}],
            "providers": [{"id": "openai:chat:m", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1",
                                                             "tools": "file://tools.json",
                                                             "tool_choice": {"type": "function",
                                                                             "function": {"name": "get_time"}}}},
                          {"id": "openai:chat:m", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1",
                                                             "tools": [WEATHER], "tool_choice": "required"}}]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(data))
    suite = load_config(path)
    first, second = suite.variants
    assert [t["function"]["name"] for t in first.tools] == ["get_weather", "get_time"]
    assert first.tool_choice == "get_time" and second.tool_choice == "required"
    assert first.request("Weather?", None).tools == (WEATHER, TIME)
    data["providers"][1]["config"]["tools"] = [WEATHER, WEATHER]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert any("is also tool 1's; names must be unique" in p for p in caught.value.problems)
