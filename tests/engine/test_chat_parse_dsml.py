"""DeepSeek V3.2 / V4's DSML calls (app/engine/chat/parse/dsml.py) where llama.cpp's parser for them
(common/parsers/deepseek.cpp) decides more than its ported test cases show: the `string` flag must be the one the
schema gives, required parameters come first in schema order, the text before the block ends before its `\\n\\n`,
and a function that is not offered is still read (Chorus reports such calls)."""

import json

from app.engine.chat.parse import formats as F
from app.engine.chat.parse import parse

D = "｜DSML｜"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                                     "unit": {"type": "string"}}, "required": ["city", "days"]}}}]


def block(*params: tuple[str, str, str], name: str = "get_weather", v4: bool = False) -> str:
    kind = "tool_calls" if v4 else "function_calls"
    body = "".join(f'<{D}parameter name="{k}" string="{flag}">{v}</{D}parameter>\n' for k, flag, v in params)
    return f'<{D}{kind}>\n<{D}invoke name="{name}">\n{body}</{D}invoke>\n</{D}{kind}>'


def test_parameters_in_schema_order_become_compact_json():
    text = block(("city", "true", "Paris"), ("days", "false", "3"), ("unit", "true", "C"))
    got = parse(text, F.DEEPSEEK_V3_2, tools=TOOLS)
    assert [(c.name, c.arguments) for c in got.tool_calls] == [("get_weather", '{"city":"Paris","days":3,"unit":"C"}')]


def test_a_string_flag_the_schema_does_not_give_fails_the_call_as_in_llama_cpp():
    text = block(("city", "true", "Paris"), ("days", "true", "3"))
    got = parse(text, F.DEEPSEEK_V3_2, tools=TOOLS)
    assert got.tool_calls == () and got.content == text


def test_required_parameters_out_of_schema_order_fail_the_call():
    text = block(("days", "false", "3"), ("city", "true", "Paris"))
    assert parse(text, F.DEEPSEEK_V3_2, tools=TOOLS).tool_calls == ()


def test_a_function_not_offered_is_read_by_its_flags():
    text = block(("q", "true", "a b"), ("n", "false", "[1, 2]"), name="search", v4=True)
    (call,) = parse(text, F.DEEPSEEK_V4, tools=TOOLS).tool_calls
    assert call.name == "search" and json.loads(call.arguments) == {"q": "a b", "n": [1, 2]}


def test_content_ends_before_the_blank_line_and_never_streams_it():
    text = "Let me check.\n\n" + block(("city", "true", "Paris"), ("days", "false", "2"))
    final = parse(text, F.DEEPSEEK_V3_2, tools=TOOLS)
    assert final.content == "Let me check." and len(final.tool_calls) == 1
    for end in range(1, len(text)):
        partial = parse(text[:end], F.DEEPSEEK_V3_2, partial=True, tools=TOOLS)
        assert final.content.startswith(partial.content), (end, partial.content)
        assert all(final.tool_calls[0].arguments.startswith(c.arguments) for c in partial.tool_calls)
