"""Tool calls from the local engine (real SmolLM2 135M): a variant carrying Qwen2.5's template, whose replies
are parsed as llama.cpp parses the Hermes `<tool_call>` format. The 135M model does not call tools by itself
(no grammar here), so the reply starts inside a call (a reply prefix) and the model finishes it."""

import json

from app.engine import GenerationRequest
from app.engine.types import TOOLS_AS_TEXT
from tests.conftest import GREEDY, template_variant

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
PREFIX = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "'


def request(**fields) -> GenerationRequest:
    return GenerationRequest(**{"messages": QUESTION, "sampling": GREEDY, "max_tokens": 40, "tools": (WEATHER,),
                                "reply_prefix": PREFIX, **fields})


def test_a_call_comes_back_as_tool_calls_and_streams_growing(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant)
    seen = []
    engine.subscribe(lambda event: seen.extend(event.tool_calls.get(rid, ()) for rid in event.tool_calls))
    result = engine.submit(request()).result(timeout=120)
    assert result.finish_reason == "tool_calls" and result.error is None, result
    (call,) = result.tool_calls
    assert call["name"] == "get_weather" and call["id"]
    assert set(json.loads(call["arguments"])) == {"city"}
    assert "<tool_call>" not in result.text and TOOLS_AS_TEXT not in result.note
    assert seen and seen[-1] == result.tool_calls
    for calls in seen:  # every streamed snapshot is a prefix of the final call
        assert len(calls) == 1 and call["arguments"].startswith(calls[0]["arguments"])
        assert calls[0]["name"] == "get_weather" and calls[0]["id"] == call["id"]


def test_coalesced_twins_both_get_the_calls(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant)
    first, second = engine.submit(request()), engine.submit(request())
    a, b = first.result(timeout=120), second.result(timeout=120)
    assert a.finish_reason == b.finish_reason == "tool_calls"
    assert [c["arguments"] for c in a.tool_calls] == [c["arguments"] for c in b.tool_calls]
    assert a.text == b.text


def test_without_tools_or_with_tool_choice_none_nothing_is_parsed(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant)
    for req in (request(tools=()), request(tool_choice="none")):
        result = engine.submit(req).result(timeout=120)
        assert result.tool_calls == () and result.finish_reason in ("stop", "length")
        assert result.text.startswith("Paris") or result.text  # the raw continuation, markup included


def test_a_template_with_no_call_format_keeps_the_text_and_says_so(make_engine):
    engine = make_engine(tool_format="template")  # without the generic format (test_tool_generic.py)
    result = engine.submit(request(max_tokens=8)).result(timeout=120)
    assert result.tool_calls == () and result.note == TOOLS_AS_TEXT


def test_a_call_before_the_end_of_thinking_ends_it_as_llama_cpp_reads_it(make_engine, model_path, tmp_path_factory):
    """Qwen3.5 (thinking on, its generation prompt opens <think>) may start a call before </think>: llama.cpp's
    parser ends the thinking there (thinking_end_tags), so the engine's split does too and the call is parsed."""
    engine = make_engine(model_path=template_variant(model_path, tmp_path_factory, "Qwen3.5-4B"))
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    grammar = "root ::= " + json.dumps("I will ask the tool.\n" + call)
    result = engine.submit(request(reply_prefix="", grammar=grammar, thinking=True, max_tokens=60)).result(timeout=120)
    assert result.error is None and result.finish_reason == "tool_calls", result
    assert result.reasoning_text == "I will ask the tool."
    assert [(c["name"], json.loads(c["arguments"])) for c in result.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_a_reply_cut_in_its_second_call_keeps_the_first(make_engine, qwen_variant):
    """Required, call first, parallel calls left to the default: the model writes one call after another, and the
    token limit cuts the second in its arguments. The complete call comes back as a call (not the raw markup as
    text), the one cut off is dropped and the note says so; the last streamed calls are the final ones."""
    engine = make_engine(model_path=qwen_variant)
    seen = []
    engine.subscribe(lambda event: seen.extend(event.tool_calls.values()))
    result = engine.submit(request(reply_prefix="", tool_choice="required", tool_call_first=True,
                                   max_tokens=60)).result(timeout=120)
    assert result.finish_reason == "length", result
    (call,) = result.tool_calls
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert result.text == "" and "dropped" in result.note
    assert seen[-1] == result.tool_calls and any(len(calls) == 2 for calls in seen)  # the second call was streaming
