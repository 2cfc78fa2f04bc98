"""Solar Open 100B's replies (format `solar-open`: the calls llama.cpp's template analysis derives, TAG_WITH_JSON,
common/chat-diff-analyzer.cpp -> chat-auto-parser-generator.cpp build_tool_parser_tag_json), written as the
template renders an assistant call, and its grammars read on the model's vocabulary: the analysis keeps its probe
call's id `call00001` in the name prefix, so a call with any other id is text to llama.cpp's parser and is refused
by its grammar, here too."""

import pytest

from app.engine.chat.grammar.formats import tool_gbnf
from app.engine.chat.grammar.tool_choice import auto_gbnf, required_gbnf
from app.engine.chat.parse import BY_NAME, ParsedMessage, ToolCall, detect, parse
from app.engine.chat.parse.stream import ToolStream, extends
from app.engine.chat.template.render import ChatTemplate
from app.engine.native import LlamaModel
from tests.backends.test_tool_grammar_server import accepts
from tests.fixtures.servers import llama_cpp_templates

SOLAR = BY_NAME["solar-open"]
SOURCE = llama_cpp_templates().get("upstage-Solar-Open-100B")
needs_template = pytest.mark.skipif(SOURCE is None, reason="llama.cpp's templates are not in the cache: run "
                                                           "`make llama-source`")
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def rendered(*cities: str, call_id: str = "call00001") -> str:
    """The template's own rendering of an assistant turn calling get_weather once per city, after the generation
    prompt `<|begin|>assistant` and up to its end `<|calls|>` (the template then writes `<|begin|>assistant`
    again: it defaults add_generation_prompt to true where, as in llama.cpp's renders, it is left undefined)."""
    chat = ChatTemplate(SOURCE, "", "")
    calls = [{"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": {"city": c}}}
             for c in cities]
    head = chat.render(QUESTION, tools=[WEATHER])
    whole = chat.render([*QUESTION, {"role": "assistant", "content": "", "tool_calls": calls}], tools=[WEATHER],
                        add_generation_prompt=False)
    assert whole.startswith(head) and whole.endswith("<|calls|><|begin|>assistant")
    return whole[len(head):-len("<|begin|>assistant")]


def weather(city: str) -> ToolCall:
    return ToolCall("", "get_weather", f'{{"city": "{city}"}}')  # as written; llama.cpp reads no id here


@needs_template
def test_the_template_gets_the_solar_format_and_renders_its_markers():
    assert detect(SOURCE) is SOLAR
    assert rendered("Paris") == ('<|tool_calls|><|tool_call:begin|>call00001<|tool_call:name|>get_weather'
                                 '<|tool_call:args|>{"city": "Paris"}<|tool_call:end|><|calls|>')
    assert {n for n, s in llama_cpp_templates().items() if detect(s) is SOLAR} == {"upstage-Solar-Open-100B"}


@needs_template
def test_whole_replies_content_before_calls_and_several_calls():
    assert parse(rendered("Paris"), SOLAR, tools=[WEATHER]) == ParsedMessage("", "", (weather("Paris"),))
    got = parse("Let me check. " + rendered("Paris", "Rome"), SOLAR, tools=[WEATHER])
    assert got == ParsedMessage("Let me check. ", "", (weather("Paris"), weather("Rome")))


@needs_template
def test_a_streamed_reply_grows_its_calls():
    text, stream, seen = "Checking." + rendered("Paris", "Rome"), ToolStream(SOLAR, [WEATHER]), []
    for c in text:
        stream.feed(c)
        assert "<|" not in stream.content  # a cut marker is held back
        seen.append(stream.calls)
    stream.finish()
    assert stream.content == "Checking." and stream.calls == (weather("Paris"), weather("Rome"))
    named = [calls for calls in seen if calls]
    assert named[0] == (ToolCall("", "get_weather", ""),)  # once the name is complete
    assert all(extends(a, b) for a, b in zip(named, named[1:], strict=False))  # arguments only grow


@needs_template
def test_another_call_id_is_text_as_llama_cpp_s_parser_reads_it():
    other = rendered("Paris", call_id="a1b2c3d4e5")
    assert parse(other, SOLAR, tools=[WEATHER]) == ParsedMessage(other)
    assert parse(other[:other.index("Paris")], SOLAR, tools=[WEATHER], partial=True).tool_calls == ()


@needs_template
def test_malformed_calls_and_thinking_markup_stay_text():
    broken = rendered("Paris").replace('"Paris"}', '"Paris"')  # the JSON never closes
    assert parse(broken, SOLAR, tools=[WEATHER]) == ParsedMessage(broken)
    # no reasoning in this format (the template renders `reasoning`, the analysis probes `reasoning_content`):
    # the thinking block the model may write before its calls is content, as llama.cpp's parser has it
    thought = "<|think|>I should look it up<|end|><|begin|>assistant"
    assert parse(thought + rendered("Paris"), SOLAR, tools=[WEATHER]) == ParsedMessage(thought, "",
                                                                                       (weather("Paris"),))
    assert parse(rendered("Paris"), SOLAR, calls=False).tool_calls == ()


@needs_template
def test_grammars_take_the_template_s_call_with_the_analysis_id_only(model_path):
    tools = (WEATHER,)
    required = required_gbnf("solar-open", SOURCE, tools, False, False)
    lazy, triggers = auto_gbnf("solar-open", SOURCE, tools, False)
    assert triggers == (r"<\|tool_calls\|>",)
    model = LlamaModel(model_path)
    try:
        assert accepts(model, required, ("Let me check. " + rendered("Paris"), False))
        assert accepts(model, tool_gbnf("solar-open", tools, True), (rendered("Paris", "Rome"), False))
        assert accepts(model, lazy, (rendered("Paris"), False))
        assert not accepts(model, required, (rendered("Paris", call_id="a1b2c3d4e5"), False))
    finally:
        model.close()
