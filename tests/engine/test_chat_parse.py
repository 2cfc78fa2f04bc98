"""app.engine.chat.parse: replies split into content, reasoning and tool calls as llama.cpp splits them, whole and
token by token (the partial results only grow and end at the one-shot parse)."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine.chat.parse import BY_NAME, ToolCall, ToolStream, detect, parse
from tests.fixtures.servers import llama_cpp_templates

HERMES = BY_NAME["hermes"]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def test_a_hermes_call_is_parsed_out_of_the_content():
    message = parse("Let me look." + CALL, HERMES)
    assert message.content == "Let me look."
    assert message.tool_calls == (ToolCall("", "get_weather", '{"city": "Paris"}'),)


def test_thinking_content_and_two_calls():
    message = parse("<think>\nweather\n</think>\n\n" + CALL + "\n" + CALL.replace("Paris", "Rome"), HERMES)
    assert message.reasoning_content == "weather" and message.content == ""
    assert [json.loads(c.arguments)["city"] for c in message.tool_calls] == ["Paris", "Rome"]


def test_markup_that_is_not_a_call_stays_content():
    text = "Use <tool_call>not json</tool_call> here"
    assert parse(text, HERMES).content == text and not parse(text, HERMES).tool_calls


def test_tagged_arguments_are_written_as_llama_cpp_writes_them():
    # llama.cpp's mapper writes `"key":value` joined by "," (no blanks), a string value escaped, any other value's
    # text as the model wrote it (common/chat-peg-parser.cpp, common_chat_peg_mapper::map).
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "array"}}}}}]
    glm = ("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
           "<arg_key>days</arg_key>\n<arg_value>[1, 2]</arg_value>\n</tool_call>")
    assert parse(glm, BY_NAME["glm-4.5"], tools=tools).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Paris","days":[1, 2]}'),)
    lfm2 = '<|tool_call_start|>[get_weather(city="Paris", days=[1, 2])]<|tool_call_end|>'
    assert parse(lfm2, BY_NAME["lfm2"], tools=tools).tool_calls[0].arguments == '{"city":"Paris","days":[1, 2]}'
    cut = glm[:glm.index("Paris") + 3]
    assert parse(cut, BY_NAME["glm-4.5"], partial=True, tools=tools).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Par'),)


def test_a_tagged_parameter_the_tool_does_not_take_ends_the_streamed_call_where_llama_cpp_ends_it():
    # llama.cpp's parser for a tool takes its required parameters in order, then its optional ones; at any other
    # parameter its parse fails, and llama-server keeps streaming the call as parsed so far (its last partial
    # parse). Chorus's partial parse stops there too; the whole reply is still refused at the end.
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}}]
    text = ("<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
            "<parameter=city>Bos.Paris</parameter>\n<parameter=city>Bos")
    seed = BY_NAME["seed-oss"]
    assert parse(text, seed, partial=True, tools=tools).tool_calls == (ToolCall("", "get_weather", '{"city":"Paris"'),)
    assert not parse(text, seed, tools=tools).tool_calls
    glm = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>city</arg_key><arg_key>"
    assert parse(glm, BY_NAME["glm-4.5"], partial=True, tools=tools).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Paris"'),)


def test_the_qwen_templates_are_hermes():
    templates = llama_cpp_templates()
    if not templates:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    for name in ("Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use"):
        assert detect(templates[name]).name == "hermes", name
    assert detect(templates["Qwen3-Coder"]).name == "qwen3-coder"


def _stream_agrees(text: str, cuts: list[int], fmt, opened, **kw) -> None:
    final = parse(text, fmt, opened=opened, **kw)
    points = sorted({c % (len(text) + 1) for c in cuts}) + [len(text)]
    last = ()
    for point in points:
        step = parse(text[:point], fmt, partial=True, opened=opened, **kw)
        if point == len(text) and step.content.strip() and final.content.strip():
            assert final.content.strip().startswith(step.content.strip()), (point, step, final)
        assert len(last) <= len(step.tool_calls) <= len(final.tool_calls), (point, step, final)
        for got, want in zip(step.tool_calls, final.tool_calls, strict=False):
            assert got.name == want.name and want.arguments.startswith(got.arguments), (point, got, want)
        for before, after in zip(last, step.tool_calls, strict=False):
            assert after.arguments.startswith(before.arguments), (point, before, after)
        last = step.tool_calls
    assert parse(text, fmt, partial=False, opened=opened, **kw) == final


SAMPLES = [  # (format, reply, generation prompt opened thinking)
    (HERMES, "Sure." + CALL + CALL.replace("Paris", "Rome"), ""),
    (HERMES, "weigh it</think>\n\n" + CALL, "<think>\n"),
    (HERMES, "<think>no</think>plain <tool_call> text", ""),
]


def _ported():
    """llama.cpp's whole replies with calls (the ported cases that pass), each as a stream to cut up."""
    if not TEMPLATES:
        return []
    from tests.engine.test_chat_parse_ported import DATA, _setting
    out = []
    for case in DATA:
        for template in case["templates"]:
            stem = Path(template).stem
            if ("unread" in case or case["params"].get("is_partial") or case["params"].get("continue_final_message")
                    or not case["expect"]["tool_calls"]):
                continue
            fmt, opened, reasoning, tools, calls = _setting({**case, "stem": stem})
            out.append((fmt, case["input"], opened, {"reasoning_format": reasoning, "tools": tools}))
    return out


TEMPLATES = llama_cpp_templates()
STREAMS = [(fmt, text, opened, {}) for fmt, text, opened in SAMPLES] + _ported()


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(STREAMS), cuts=st.lists(st.integers(0, 10_000), max_size=40))
def test_token_by_token_partial_calls_are_prefixes_of_the_final_ones(case, cuts):
    """Cut anywhere (a token may end mid-marker): calls only appear and grow, each partial call a prefix of the
    final one, and the last parse is the one-shot parse."""
    fmt, text, opened, kw = case
    _stream_agrees(text, cuts, fmt, opened, **kw)


def test_the_bench_figure_for_the_parser_is_measured_on_both_replies():
    from app.bench.tool_parse import parser_cost_us

    cost = parser_cost_us(repeats=1)
    assert cost["plain"] > 0 and cost["call"] > 0 and cost["plain_tokens"] > cost["call_tokens"] > 50


WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def _streamed(fmt, prefix: str, pieces: list[str]) -> ToolStream:
    """A reply prefix and the generated pieces fed as the engine feeds them, one token's text at a time."""
    stream = ToolStream(fmt, WEATHER, prefix=prefix)
    for piece in pieces:
        stream.feed(piece)
    return stream


# The parity cases of tests/backends/test_tool_call_parity.py (SmolLM2 135M, greedy, 2026-11-26): llama-server
# refused these replies (text after the call), and its stream ended at the token where its parse lost the call.
def test_a_call_then_text_keeps_the_streamed_call_where_llama_server_s_stream_ended():
    prefix = '<|tools_prefix|>[{"get_weather": {"city": "'
    pieces = ['Paris', '"}}', '\n', '//', ' The current weather in a city', '\ntype get_weather = (_: {\ncity: string',
              '\n}) => any;', '<|develop']
    stream = _streamed(BY_NAME["apertus"], prefix, pieces)
    assert stream.calls == (ToolCall("", "get_weather", '{"city": "Paris"}'),)
    final = stream.final()  # llama-server answers HTTP 500; Chorus keeps the call and the text after it
    assert final.tool_calls == stream.calls and final.content.startswith("// The current weather")


def test_a_field_after_the_arguments_ends_the_streamed_call_before_it_as_llama_cpp_s_does():
    prefix = '\n<tool_calls>[{"name": "get_weather", "arguments": {"city": "'
    pieces = ['Paris', '"},', ' "', 'type', '":', ' "', 'function', '"}}', '\n<|system|>\nYou are a thoughtful']
    stream = _streamed(BY_NAME["apriel"], prefix, pieces)
    assert stream.calls == (ToolCall("", "get_weather", '{"city": "Paris'),)
    assert stream.final().tool_calls == (ToolCall("", "get_weather", '{"city": "Paris"}'),)


def test_minimax_m3_calls_are_read_in_its_own_markup():
    ns = "]<]minimax[>["
    prefix = f'</mm:think>{ns}<tool_call>\n{ns}<invoke name="get_weather">{ns}<city>'
    stream = _streamed(BY_NAME["minimax-m3"], prefix, ["]", "minimax", "[>[<", "key-a>val-a]<", "]minimax[>[<",
                                                        "key-b>val-b", "]<"])
    assert stream.calls == (ToolCall("", "get_weather", '{"city":"]minimax[>[<key-a>val-a]<]minimax[>[<key-b>val-b'),)
    whole = prefix + f"Paris{ns}</city>{ns}</invoke>\n{ns}</tool_call>"
    assert parse(whole, BY_NAME["minimax-m3"], tools=WEATHER).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Paris"}'),)


def test_cohere2moe_call_markup_inside_its_text_is_text():
    prefix = ('<|END_THINKING|><|START_TEXT|><|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", '
              '"parameters": {"city": "')
    stream = _streamed(BY_NAME["cohere2moe"], prefix, ['Paris', '"},', ' "response": null}\n]\n```\n\n# How to use'])
    assert stream.calls == () and stream.final().tool_calls == ()
    assert stream.final_content().endswith('"response": null}\n]\n```\n\n# How to use')
    call = '<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", ' \
           '"parameters": {"city": "Paris"}}]<|END_ACTION|>'
    assert parse(call, BY_NAME["cohere2moe"], tools=WEATHER).tool_calls == (
        ToolCall("0", "get_weather", '{"city": "Paris"}'),)


def test_cohere2moe_and_minimax_m3_templates_get_their_own_formats():
    # common/chat.cpp's specialized checks: <|START_TEXT|> + <|START_ACTION|>; the ]<]minimax[>[ namespace token
    if not TEMPLATES:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    assert detect(TEMPLATES["Cohere2MoE"]).name == "cohere2moe"
    assert detect(TEMPLATES["MiniMax-M3"]).name == "minimax-m3"
    assert detect(TEMPLATES["CohereForAI-c4ai-command-r7b-12-2024-tool_use"]).name == "command-r7b"


def test_command_r7b_calls_after_a_second_thinking_block_are_text_as_llama_cpp_reads_them():
    # The parity case's prompt ends with two thinking blocks (llama-server's continuation writes one, the template's
    # own call another); llama.cpp's parser takes one, then stops ("unparsed peg-native output:
    # <|START_THINKING|>..."), so its stream never has the call. Chorus read a call at <|START_ACTION|> anywhere.
    prefix = ('<|START_THINKING|><|END_THINKING|><|START_THINKING|><|END_THINKING|><|START_ACTION|>[\n    '
              '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "')
    stream = _streamed(BY_NAME["command-r7b"], prefix, ['Paris', '"},', ' "', 'responses', '":', ' null', '}\n]'])
    assert stream.calls == () and stream.final().tool_calls == ()
    call = prefix[34:] + 'Paris"}}\n]<|END_ACTION|>'
    assert parse(call, BY_NAME["command-r7b"], tools=WEATHER).tool_calls == (
        ToolCall("0", "get_weather", '{"city": "Paris"}'),)


WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}}, "required": ["city"]}}}]


def test_a_qwen3_coder_value_ends_only_at_its_whole_end_marker():
    # llama.cpp's Qwen3-Coder parser (common/parsers/qwen3-coder.cpp) reads a string value up to "\n</parameter>\n"
    # and nothing else: SmolLM2 under Qwen3-Coder's template wrote Paris</parameter> (no newline), which llama-server
    # streamed as part of the value, the call cut by max_tokens (the parity test's reply, 2026-11-26).
    text = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis</parameter>\n</function>\n</tool_call>\n\n"
            "The weather in Paris is currently in the Parisian style of Paris, with a")
    qwen = BY_NAME["qwen3-coder"]
    assert parse(text, qwen, partial=True, tools=WEATHER).tool_calls == (ToolCall("", "get_weather", '{"city":"Paris'
        '</parameter>\\n</function>\\n</tool_call>\\n\\nThe weather in Paris is currently in the Parisian style of '
        'Paris, with a'),)
    assert not parse(text, qwen, tools=WEATHER).tool_calls
    # the closing quote comes with the whole end marker (llama.cpp's tool_arg_close is atomic)
    cut = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</param"
    assert parse(cut, qwen, partial=True, tools=WEATHER).tool_calls == (ToolCall("", "get_weather", '{"city":"Paris'),)
    assert parse(cut + "eter>\n", qwen, partial=True, tools=WEATHER).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Paris"'),)


def test_a_partial_pythonic_call_streams_its_arguments_as_llama_cpp_writes_them():
    # llama.cpp's LFM2 parser (common/chat-peg-parser.cpp, python_style_tool_calls) takes only the tool's own keys:
    # at `country=` its parse fails, so llama-server's last streamed call was {"city":"Paris" (the parity test's
    # LFM2.5 8B reply, 2026-11-26); while it streams, each key and value as its mapper writes them.
    text = ("<|tool_call_start|>[get_weather(city='Paris',country='France',city_type='Europe',"
            "city_description='Paris',city_type='Europe',city_description='Paris',city_")
    lfm2 = BY_NAME["lfm2"]
    assert parse(text, lfm2, partial=True, tools=WEATHER).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Paris"'),)
    assert parse("<|tool_call_start|>[get_weather(city='Par", lfm2, partial=True, tools=WEATHER).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Par'),)
    assert parse("<|tool_call_start|>[get_weather(city='Paris')", lfm2, partial=True, tools=WEATHER).tool_calls == (
        ToolCall("", "get_weather", '{"city":"Paris"}'),)


def test_a_response_format_answer_streams_without_its_json_fence():
    # llama.cpp's response-format parsers (Ministral 3's, the auto-parser's) read the JSON inside an optional
    # ```json fence as the content and no calls: streamed, the fence never shows and the content only grows.
    text = '[THINK]The invoice.[/THINK]```json\n{"amount": 123.45, "name": "[TOOL_CALLS]x"}\n```'
    fmt = BY_NAME["magistral"]  # Ministral 3 14B Reasoning's
    whole = parse(text, fmt, response_format=True, tools=WEATHER)
    assert (whole.content, whole.reasoning_content, whole.tool_calls) == (
        '{"amount": 123.45, "name": "[TOOL_CALLS]x"}', "The invoice.", ())
    last = ""
    for end in range(1, len(text) + 1):
        content = parse(text[:end], fmt, partial=True, response_format=True, tools=WEATHER).content
        assert "`" not in content and content.startswith(last.rstrip()), (end, content)
        last = content


def test_gemma4_stray_channel_tokens_end_the_message_while_it_streams():
    # gemma4.cpp: an empty thought block after the content is dropped, a lone <channel|> ends the message (what
    # follows is not part of it), stray <|channel> tokens before a thought are skipped; streamed, no tag shows.
    gemma = BY_NAME["gemma4"]
    text = "<|channel><|channel>thought\nhm<channel|>Hello!<|channel>thought\n<channel|><channel|>trailing"
    whole = parse(text, gemma)
    assert (whole.content, whole.reasoning_content) == ("Hello!", "hm")
    for end in range(1, len(text) + 1):
        step = parse(text[:end], gemma, partial=True)
        assert "<" not in step.content and "Hello!".startswith(step.content), (end, step)
    called = parse("Hi<channel|>dropped<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>after",
                   gemma, tools=WEATHER)
    assert (called.content, called.tool_calls) == ("Hi", (ToolCall("", "get_weather", '{"city":"Paris"}'),))


def test_a_named_json_call_streams_its_arguments_from_a_brace():
    # llama.cpp's mapper starts a call's arguments at "{" once its name is parsed (common/chat-peg-parser.cpp,
    # the tool-name tag): llama-server streamed ("get_weather", "{") for Command R+'s call cut by max_tokens
    # inside "parameters" (the parity test's required case, 2026-11-27).
    text = 'Action:\n```json\n[\n    {\n        "tool_name": "get_weather",\n        "parameters'
    assert parse(text, BY_NAME["command-r-plus"], partial=True, tools=WEATHER).tool_calls == (
        ToolCall("", "get_weather", "{"),)


MINICPM5_TOOLS = [{"type": "function", "function": {"name": "html", "parameters": {"type": "object", "properties": {
    "markup": {"type": "string"}, "depth": {"type": "integer"}}, "required": ["markup"]}}}]


def test_minicpm5_values_are_read_as_its_parser_reads_them():
    # common/parsers/minicpm5.cpp: a string value is text up to </param>, or the inside of a CDATA block (which
    # may hold </param>); another value is JSON of its schema; parameters in any order; a key the tool does not
    # take, or a value that is not JSON where JSON is due, fails the parse (the reply stays text).
    cpm = BY_NAME["minicpm5"]
    call = ('<function name="html"><param name="depth">2</param><param name="markup"><![CDATA[<a>x</a> </param>]]>'
            '</param></function>')
    assert parse(call, cpm, tools=MINICPM5_TOOLS).tool_calls == (
        ToolCall("", "html", '{"depth":2,"markup":"<a>x</a> </param>"}'),)
    # while it streams, the CDATA value is shown open, without a tail that may begin its "]]>"
    cut = call[:call.index("]]>") + 2]
    assert parse(cut, cpm, partial=True, tools=MINICPM5_TOOLS).tool_calls == (
        ToolCall("", "html", '{"depth":2,"markup":"<a>x</a> </param>'),)
    for bad in (call.replace('"depth"', '"width"'), call.replace(">2<", ">two<")):
        assert parse(bad, cpm, tools=MINICPM5_TOOLS) == parse(bad, cpm, tools=MINICPM5_TOOLS, calls=False)
