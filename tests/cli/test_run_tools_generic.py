"""`python -m app run` on the embedded model with tools and tool_choice "required" (DESIGN.md, "Tools on the
embedded model"): its template has no tool-call format, so the tools are offered in llama.cpp's generic JSON
format, and the result's tool_calls hold a call to one of them with JSON arguments."""

import json

from tests.cli.test_run import chorus, write_jsonl

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}},
         {"type": "function", "function": {"name": "get_time", "description": "The time in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]
LINE = {"id": "w", "messages": [{"role": "user", "content": "What is the weather in Paris?"}], "tools": TOOLS,
        "tool_choice": "required", "sampling": {"temperature": 0}, "max_tokens": 60}


def test_the_embedded_model_calls_a_tool_when_required(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(LINE)])
    run = chorus(source, "--out", tmp_path / "out.jsonl", "--slots", 1)
    assert run.returncode == 0, run.stderr
    (result,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert result["finish_reason"] == "tool_calls" and result["tool_calls"], result
    for call in result["tool_calls"]:
        assert call["name"] in ("get_weather", "get_time")
        assert isinstance(json.loads(call["arguments"]), dict)


def test_the_template_override_offers_no_tool_format(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps({**LINE, "max_tokens": 8})])
    run = chorus(source, "--out", tmp_path / "out.jsonl", "--slots", 1, "--tool-format", "template")
    assert run.returncode == 0, run.stderr
    (result,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert not result.get("tool_calls"), result
