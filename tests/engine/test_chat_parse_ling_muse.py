"""Ling 3.0 (common/parsers/ling3.cpp) and Muse Glimmer (common/parsers/muse-glimmer.cpp) beyond llama.cpp's own
cases (test_chat_parse_ported.py): which templates take them, and what a streamed reply shows on the way."""

import pytest

from app.engine.chat.parse import detect, parse
from app.engine.chat.parse import formats as F
from tests.fixtures.servers import llama_cpp_templates

TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
LING_CALL = "<tool_call>get_time\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
MUSE_CALL = ('<atem:function_calls>\n<atem:invoke name="get_time">\n<atem:parameter name="city">Paris'
             '</atem:parameter>\n<atem:parameter name="days">2</atem:parameter>\n</atem:invoke>\n'
             '</atem:function_calls>')


@pytest.fixture(scope="module")
def templates():
    found = llama_cpp_templates()
    if not found:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    return found


def test_each_template_takes_its_handler_and_the_glm_family_stays_glm(templates):
    assert detect(templates["inclusionai-ling-3.0-flash"]) is F.LING3
    assert detect(templates["muse-glimmer"]) is F.MUSE_GLIMMER
    for name, source in templates.items():
        if "<arg_key>" in source and name != "inclusionai-ling-3.0-flash":
            assert detect(source) is F.GLM_4_5, name


def _stream(text: str, fmt, **kw):
    """Every partial parse of `text` cut after each character, then the final one."""
    return [parse(text[:end], fmt, partial=True, **kw) for end in range(1, len(text) + 1)], parse(text, fmt, **kw)


def _content_only_grows(steps, final):
    shown = [s.content for s in steps] + [final.content]
    return all(b.startswith(a) for a, b in zip(shown, shown[1:], strict=False))


def test_ling3_turn_end_is_dropped_and_never_shown_while_it_arrives():
    steps, final = _stream("Here is the answer.<|role_end|>", F.LING3, tools=(TIME,), calls=False)
    assert final.content == "Here is the answer."
    assert all("<|" not in s.content for s in steps) and _content_only_grows(steps, final)


def test_ling3_text_after_the_calls_streams_as_content_up_to_the_turn_end():
    text = LING_CALL + "\nThe time has been checked.<|role_end|>"
    steps, final = _stream(text, F.LING3, tools=(TIME,))
    assert [c.name for c in final.tool_calls] == ["get_time"] and final.content.strip() == "The time has been checked."
    assert steps[-2].content.strip() == "The time has been checked." and _content_only_grows(steps, final)


def test_ling3_thinking_ends_at_a_call_when_the_prompt_left_it_open():
    got = parse("I should look.\n" + LING_CALL, F.LING3, opened="<think>", tools=(TIME,))
    assert (got.reasoning_content, got.content, got.tool_calls[0].arguments) == (
        "I should look.", "", '{"city":"Paris"}')


def test_muse_answer_then_calls_stream_without_markers_and_calls_only_grow():
    text = (" to=self<|message|>Look it up.<|eom|><|start|>assistant to=user<|message|>One moment.<|eom|>"
            "<|start|>assistant to=get_time<|message|>" + MUSE_CALL + "<|eom|><|start|>assistant to=get_time"
            "<|message|>" + MUSE_CALL.replace("Paris", "Rome"))
    steps, final = _stream(text, F.MUSE_GLIMMER, tools=(TIME,))
    assert (final.reasoning_content, final.content) == ("Look it up.", "One moment.")
    assert [c.arguments for c in final.tool_calls] == ['{"city":"Paris","days":2}', '{"city":"Rome","days":2}']
    assert all("<|" not in s.content and "<|" not in s.reasoning_content for s in steps)
    assert _content_only_grows(steps, final)
    calls = [s.tool_calls for s in steps] + [final.tool_calls]
    for before, after in zip(calls, calls[1:], strict=False):
        assert len(after) >= len(before)
        assert all(a.name == b.name and b.arguments.startswith(a.arguments) for a, b in zip(before, after,
                                                                                             strict=False))


def test_muse_reasoning_none_keeps_the_thinking_as_content_and_without_tools_the_whole_reply():
    text = " to=self<|message|>Think.<|eom|><|start|>assistant to=user<|message|>Hi!<|eot|>"
    assert parse(text, F.MUSE_GLIMMER, reasoning_format="none", tools=(TIME,)).content == "Think.Hi!"
    assert parse(text, F.MUSE_GLIMMER, reasoning_format="none", calls=False).content == text
    assert parse(text, F.MUSE_GLIMMER, calls=False).content == "Hi!"


def test_muse_a_call_cut_by_the_length_limit_stays_text():
    text = " to=get_time<|message|>" + MUSE_CALL[:80]
    assert parse(text, F.MUSE_GLIMMER, tools=(TIME,)).tool_calls == ()
    assert parse(text, F.MUSE_GLIMMER, tools=(TIME,), partial=True).tool_calls[0].arguments.startswith('{"city":"')
