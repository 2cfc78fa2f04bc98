"""Tencent Hy3 (formats.HY3: the calls llama.cpp's template analysis derives from models/templates/tencent-Hy3.jinja,
parsed by its generated tagged parser): which template takes it, and replies written as the template renders an
assistant's calls, whole and streamed."""

import pytest

from app.engine.chat.parse import detect, parse
from app.engine.chat.parse import formats as F
from app.engine.chat.template.render import ChatTemplate
from tests.fixtures.servers import llama_cpp_templates

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}}
TOOLS = (WEATHER, TIME)
QUESTION = [{"role": "user", "content": "Weather and time in Paris?"}]


def _call(name: str, arguments: str) -> dict:
    return {"id": "a1b2c3d4e", "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.fixture(scope="module")
def template():
    found = llama_cpp_templates()
    if "tencent-Hy3" not in found:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    return found["tencent-Hy3"]


def rendered(source: str, content: str, *calls: dict) -> str:
    """The template's own assistant turn after its generation prompt (which ends with an empty thinking block)."""
    chat = ChatTemplate(source, "", "")
    head = chat.render(QUESTION, tools=list(TOOLS))
    whole = chat.render([*QUESTION, {"role": "assistant", "content": content, "tool_calls": list(calls)}],
                        tools=list(TOOLS), add_generation_prompt=False)
    assert whole.startswith(head), (head[-80:], whole[-200:])
    return whole[len(head):].removesuffix("<｜hy_eos:opensource｜>")


def test_only_hy3_takes_the_format(template):
    assert detect(template) is F.HY3
    assert [n for n, s in llama_cpp_templates().items() if detect(s) is F.HY3] == ["tencent-Hy3"]


def test_a_whole_reply_with_content_before_two_calls(template):
    text = rendered(template, "Let me check.", _call("get_weather", '{"city": "Paris", "days": 2}'),
                    _call("get_time", '{"timezone": "Europe/Paris"}'))
    got = parse(text, F.HY3, tools=TOOLS)
    assert got.content == "Let me check."
    assert [(c.name, c.arguments) for c in got.tool_calls] == [
        ("get_weather", '{"city":"Paris","days":2}'), ("get_time", '{"timezone":"Europe/Paris"}')]


def test_a_streamed_reply_shows_no_markup_and_its_calls_only_grow(template):
    text = rendered(template, "One moment.", _call("get_weather", '{"city": "Paris", "days": 2}'),
                    _call("get_time", '{"timezone": "Europe/Paris"}'))
    steps = [parse(text[:end], F.HY3, partial=True, tools=TOOLS) for end in range(1, len(text) + 1)]
    final = parse(text, F.HY3, tools=TOOLS)
    assert all("One moment.".startswith(s.content) for s in steps)
    assert steps[-1].content == final.content == "One moment."
    calls = [s.tool_calls for s in steps] + [final.tool_calls]
    for before, after in zip(calls, calls[1:], strict=False):
        assert len(after) >= len(before)
        assert all(a.name == b.name and b.arguments.startswith(a.arguments)
                   for a, b in zip(before, after, strict=False))
    cut = text[:text.index("Paris") + 3]
    assert parse(cut, F.HY3, partial=True, tools=TOOLS).tool_calls[0].arguments == '{"city":"Par'


def test_thinking_before_the_calls(template):
    text = "<think:opensource>The user wants weather.</think:opensource>" + rendered(
        template, "", _call("get_weather", '{"city": "Paris"}'))
    got = parse(text, F.HY3, tools=TOOLS)
    assert (got.reasoning_content, got.content, [c.arguments for c in got.tool_calls]) == (
        "The user wants weather.", "", ['{"city":"Paris"}'])
    assert parse(text, F.HY3, tools=TOOLS, reasoning_format="none").content.startswith("<think:opensource>The")


def test_without_tools_the_call_markup_is_content(template):
    text = rendered(template, "", _call("get_weather", '{"city": "Paris"}'))
    assert parse(text, F.HY3, calls=False).content == text


def test_a_malformed_call_stays_content():
    text = ("<tool_calls:opensource>\n<tool_call:opensource>get weather<tool_sep:opensource>\n"
            "<arg_key:opensource>city</arg_key:opensource>\n<arg_value:opensource>Paris</arg_value:opensource>\n"
            "</tool_call:opensource>\n</tool_calls:opensource>")
    got = parse(text, F.HY3, tools=TOOLS)
    assert (got.content, got.tool_calls) == (text, ())


def test_a_call_shows_once_its_opening_is_read_whole_as_llama_cpp_reads_it_atomically():
    """build_func_parser: atomic(NAME space <tool_sep> space peek(<arg_key>)) for a tool with required parameters,
    the whole call atomic for one without."""
    now = {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    head = "<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n<arg_key:opensource>"
    for cut in ("<tool_calls:opensource>\n<tool_call:opensource>get_weather<tool_sep:opensource>\n", head[:-3]):
        assert parse(cut, F.HY3, partial=True, tools=TOOLS + (now,)).tool_calls == ()
    assert parse(head, F.HY3, partial=True, tools=TOOLS).tool_calls[0].arguments == "{"
    empty = "<tool_calls:opensource>\n<tool_call:opensource>now<tool_sep:opensource>\n</tool_call:opensource>\n"
    assert parse(empty[:-2], F.HY3, partial=True, tools=(now,)).tool_calls == ()
    assert [c.arguments for c in parse(empty, F.HY3, partial=True, tools=(now,)).tool_calls] == ["{}"]
    no_args = empty.replace("now", "get_weather") + "</tool_calls:opensource>"
    assert parse(no_args, F.HY3, tools=TOOLS).tool_calls == ()  # get_weather's city is required
