"""MiniMax-M1's replies, as llama.cpp's auto-parser reads them (no handler of its own: common/chat-diff-analyzer.cpp
finds JSON_NATIVE calls in the section `<tool_calls>\\n` ... `</tool_calls>` and no reasoning markers;
chat-peg-parser.cpp `standard_json_tools` builds `"<tool_calls>\\n" space call (space "," space call)* space
"</tool_calls>"`). The replies are written as the template renders an assistant's calls: one JSON object a line."""

import pytest

from app.engine.chat.parse import BY_NAME, ParsedMessage, ToolCall, ToolStream, detect, parse
from tests.fixtures.servers import llama_cpp_templates

M1 = BY_NAME["minimax-m1"]
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {key: {"type": "string"}}, "required": [key]}}}
    for name, key in (("get_weather", "city"), ("get_time", "timezone"))]
WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
TIME = '{"name": "get_time", "arguments": {"timezone": "CET"}}'
CALLS = (ToolCall("", "get_weather", '{"city": "Paris"}'), ToolCall("", "get_time", '{"timezone": "CET"}'))


def section(*calls: str, sep: str = "\n") -> str:
    """The calls as the template writes them (`sep` "\\n"), or with another separator."""
    return "<tool_calls>\n" + sep.join(calls) + "\n</tool_calls>"


def test_the_minimax_m1_template_gets_its_own_format():
    templates = llama_cpp_templates()
    if not templates:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    assert detect(templates["MiniMax-M1"]) is M1
    assert detect(templates["unsloth-Apriel-1.5"]).name == "apriel"  # also <tool_calls>, a JSON list in it
    assert detect(templates["Apriel-1.6-15b-Thinker-fixed"]).name == "apriel-thinker"


def test_a_whole_reply_with_content_before_the_call():
    assert parse("Let me look.\n" + section(WEATHER), M1, tools=TOOLS) == ParsedMessage("Let me look.\n", "",
                                                                                           CALLS[:1])


def test_several_calls_need_a_comma_between_them():
    assert parse(section(WEATHER, TIME, sep=",\n"), M1, tools=TOOLS).tool_calls == CALLS
    assert parse(section(WEATHER, TIME, sep=" , "), M1, tools=TOOLS).tool_calls == CALLS
    # Two calls on lines as the template renders them: llama.cpp's parser refuses the second (no comma) and so
    # the reply (HTTP 500); Chorus keeps the first call and the rest as content, as for any text after the calls.
    got = parse(section(WEATHER, TIME), M1, tools=TOOLS)
    assert got.tool_calls == CALLS[:1] and got.content == TIME + "\n</tool_calls>"


def test_thinking_is_content_as_the_analysis_finds_no_reasoning_markers():
    text = "<think>\nParis, then.\n</think>\n\n" + section(WEATHER)
    assert parse(text, M1, tools=TOOLS) == ParsedMessage("<think>\nParis, then.\n</think>\n\n", "", CALLS[:1])


def test_the_section_starts_with_its_newline():
    # The analysis keeps the newline the template writes after <tool_calls>: without it the text is content.
    text = "<tool_calls>" + WEATHER + "</tool_calls>"
    assert parse(text, M1, tools=TOOLS) == ParsedMessage(text, "", ())


def test_a_malformed_call_stays_content():
    for text in (section('{"name": "get_weather", "arguments": {"city": "Paris"}'),  # no closing brace
                 section('{"name": get_weather}'), section(WEATHER + ", hello")):
        assert parse(text, M1, tools=TOOLS) == ParsedMessage(text, "", ()), text


def test_a_streamed_reply_grows_call_by_call():
    text = "Checking.\n" + section(WEATHER, TIME, sep=",\n")
    stream, seen = ToolStream(M1, TOOLS), []
    for k in range(0, len(text), 3):
        stream.feed(text[k:k + 3])
        seen.append(stream.calls)
        assert not stream.content or "Checking.\n".startswith(stream.content)  # no markup released as content
    for before, after in zip(seen, seen[1:], strict=False):
        assert len(after) >= len(before)
        assert all(b.name == a.name and a.arguments.startswith(b.arguments) for b, a in zip(before, after,
                                                                                           strict=False))
    assert (ToolCall("", "get_weather", "{"),) in seen  # named once its name is read: arguments from "{"
    stream.finish()
    assert stream.calls == CALLS and stream.content == "Checking.\n"


def test_a_partial_marker_or_separator_is_held_back():
    assert parse("Checking.\n<tool_ca", M1, partial=True) == ParsedMessage("Checking.\n", "", ())
    cut = section(WEATHER)[:-len("</tool_calls>")] + ","
    assert parse(cut, M1, partial=True, tools=TOOLS).tool_calls == CALLS[:1]
    assert parse(cut + ' {"name": "get_ti', M1, partial=True, tools=TOOLS).tool_calls == CALLS[:1]
    assert parse(cut + ' {"name": "get_time"', M1, partial=True, tools=TOOLS).tool_calls == (
        CALLS[0], ToolCall("", "get_time", "{"))
