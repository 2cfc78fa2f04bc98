"""Kimi K3's replies (app/engine/chat/parse/kimi_k3.py, after common/parsers/kimi-k3.cpp) beyond llama.cpp's own
cases: streaming as its mapper writes arguments, thinking as content, what its parser refuses; and its grammars
(tool_gbnf_kimi_k3.py) read on the model's vocabulary: llama-server's required and lazy shapes take the
template's own call, Chorus's call-first shape a call the parser reads."""

import pytest

from app.engine.chat.grammar.formats import tool_gbnf
from app.engine.chat.grammar.tool_choice import auto_gbnf, required_gbnf
from app.engine.chat.parse import BY_NAME, ParsedMessage, ToolCall, detect, parse
from app.engine.chat.parse.stream import ToolStream
from app.engine.native import LlamaModel
from tests.backends.test_tool_grammar_server import accepts
from tests.fixtures.servers import llama_cpp_templates

K3 = BY_NAME["kimi-k3"]
TEMPLATES = llama_cpp_templates()
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"]}}}
CALL = ('<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
        '<|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>'
        '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>'
        '<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>')
CLOSED = "<|close|>think<|sep|>" + CALL  # the think section the generation prompt opened, closed empty
REPLY = ("I should check<|close|>think<|sep|><|open|>response<|sep|>Let me look.<|close|>response<|sep|>" + CALL
         + "<|end_of_msg|>")


def test_the_kimi_templates_get_their_own_formats_as_common_chat_cpp_chooses():
    if not TEMPLATES:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    assert detect(TEMPLATES["Kimi-K3"]).name == "kimi-k3"
    assert {detect(s).name for n, s in TEMPLATES.items() if n.startswith("moonshotai-Kimi-K2")} == {"kimi-k2"}


def test_a_call_with_thinking_and_content():
    got = parse(REPLY, K3, tools=[WEATHER])
    assert (got.reasoning_content, got.content) == ("I should check", "Let me look.")
    assert got.tool_calls == (ToolCall("", "get_weather", '{"city":"Paris","days":3}'),)


def test_streamed_arguments_are_written_as_llama_cpp_s_mapper_writes_them():
    stream, seen = ToolStream(K3, [WEATHER]), []
    for c in REPLY:
        stream.feed(c)
        if stream.calls and stream.calls[0].arguments not in seen:
            seen.append(stream.calls[0].arguments)
        assert "<|" not in stream.content
    stream.finish()
    assert seen[:3] == ["{", '{"city":', '{"city":"']  # the key once complete, a string open while it streams
    assert '{"city":"Paris"' in seen and '{"city":"Paris","days":3' in seen
    assert seen[-1] == '{"city":"Paris","days":3}' == stream.calls[0].arguments
    assert stream.content == "I should checkLet me look."  # the thinking is content with --reasoning-format none


def test_values_are_typed_by_the_schema_not_by_their_attribute():
    text = CLOSED.replace('type="number"<|sep|>3', 'type="string"<|sep|>3')
    assert parse(text, K3, tools=[WEATHER]).tool_calls[0].arguments == '{"city":"Paris","days":3}'
    untyped = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {}, "days": {"type": ["integer", "null"]}}}}}
    assert parse(text, K3, tools=[untyped]).tool_calls[0].arguments == '{"city":"Paris","days":"3"}'
    assert parse(CLOSED, K3, tools=()).tool_calls[0].arguments == '{"city":"Paris","days":3}'  # not offered
    assert parse(CALL, K3, tools=[WEATHER]) == parse(CALL, K3, calls=False)  # think never closed: all thinking


def test_what_llama_cpp_s_parser_refuses_stays_content():
    wrong_key = CLOSED.replace('key="days"', 'key="weeks"')
    got = parse(wrong_key, K3, tools=[WEATHER])
    assert got.tool_calls == () and got.content == CALL.replace('key="days"', 'key="weeks"')
    after = parse(CLOSED + "<|end_of_msg|>And more.", K3, tools=[WEATHER])
    assert len(after.tool_calls) == 1 and after.content == "And more."
    cut = CLOSED[:CLOSED.index("Paris") + 3]  # a call cut by max_tokens: streamed, then dropped (docs/tools.md)
    assert parse(cut, K3, tools=[WEATHER], partial=True).tool_calls == (ToolCall("", "get_weather", '{"city":"Par'),)
    assert parse(cut, K3, tools=[WEATHER]) == ParsedMessage(CALL[:CALL.index("Paris") + 3])
    no_tools = parse(CLOSED, K3, calls=False)
    assert no_tools.tool_calls == () and no_tools.content == CALL


def test_a_cut_marker_is_held_back_and_a_bare_reply_is_thinking():
    assert parse("Hello<|clo", K3, partial=True).reasoning_content == "Hello"
    assert parse("Hmm<|close|>think<|sep|><|open|>response<|sep|>Hi<|clo", K3).content == "Hi"
    assert parse("Hmm<|close|>think<|sep|>Hi<|close|>response<|sep|><|open|>to", K3).content == "Hi"
    assert parse("just thinking", K3) == parse("just thinking", K3, partial=True)


@pytest.fixture(scope="module")
def vocab(model_path):
    model = LlamaModel(model_path)
    yield model
    model.close()


def reads(model, gbnf: str, text: str) -> bool:
    """Whether llama.cpp's grammar engine takes `text` whole and may end there."""
    return accepts(model, gbnf, (text, False))


def test_llama_server_s_shapes_take_the_template_s_call_and_chorus_s_call_first_one_parses(vocab):
    if not TEMPLATES:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    source, tools = TEMPLATES["Kimi-K3"], (WEATHER,)
    required = required_gbnf("kimi-k3", source, tools, parallel=False, thinking=False)
    assert reads(vocab, required, REPLY)
    assert reads(vocab, required, CLOSED.replace("<|open|>tools", "Sure.<|open|>tools"))
    assert not reads(vocab, required, "I should check<|close|>think<|sep|>No call.<|close|>message<|sep|>")
    lazy, triggers = auto_gbnf("kimi-k3", source, tools, parallel=False)
    assert triggers == (r"<\|open\|>tools<\|sep\|>",)
    assert reads(vocab, lazy, CALL + "<|end_of_msg|>") and not reads(vocab, lazy, CALL + "Text")
    first = tool_gbnf("kimi-k3", tools, parallel=False)
    written = ('<|close|>think<|sep|><|open|>tools<|sep|>'
               '<|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>'
               'Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>')
    assert reads(vocab, first, written)
    assert not reads(vocab, first, written.replace('key="city" type="string"', 'key="city" type="number"'))
    assert parse(written, K3, tools=tools).tool_calls == (ToolCall("", "get_weather", '{"city":"Paris"}'),)
