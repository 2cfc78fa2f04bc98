"""Tools on a model whose chat template has no tool-call format (the embedded SmolLM2): llama.cpp's generic JSON
format (app/engine/chat/template/generic.py). The tools are described in the system message, and a required call is held
to `{"tool_call": {"name", "arguments"}}` by a grammar, so even the 135M model calls."""

import json

from app.engine import GenerationRequest
from app.engine.chat.parse import parse
from app.engine.chat.parse.generic import GENERIC
from app.engine.chat.template import generic
from app.engine.types import TOOLS_AS_TEXT
from tests.conftest import GREEDY

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def request(**fields) -> GenerationRequest:
    return GenerationRequest(**{"messages": QUESTION, "sampling": GREEDY, "max_tokens": 60,
                                "tools": (WEATHER, TIME), **fields})


def test_a_required_call_on_the_embedded_model_comes_back_as_tool_calls(make_engine):
    engine = make_engine()
    assert engine.model_info.tool_format == "generic JSON format (this model's template has none)"
    result = engine.submit(request(tool_choice="required")).result(timeout=300)
    assert result.error is None and result.finish_reason == "tool_calls", result
    (call,) = result.tool_calls
    assert call["name"] in ("get_weather", "get_time") and call["id"]
    assert isinstance(json.loads(call["arguments"]), dict)
    assert TOOLS_AS_TEXT not in result.note and result.text == ""


def test_one_named_function_is_the_call(make_engine):
    result = make_engine().submit(request(tool_choice="get_weather")).result(timeout=300)
    assert [c["name"] for c in result.tool_calls] == ["get_weather"], result
    assert set(json.loads(result.tool_calls[0]["arguments"])) == {"city"}


def test_auto_renders_the_tools_in_the_system_message(make_engine):
    engine = make_engine()
    prompt = engine.render_prompt(request())
    assert "You can call any of the following tools" in prompt and '"name": "get_weather"' in prompt
    assert generic.RESPOND in prompt and prompt.index("get_weather") < prompt.index("What is the weather")
    assert "You can call" not in engine.render_prompt(request(tool_choice="none"))
    result = engine.submit(request(max_tokens=40)).result(timeout=300)  # auto: a call or {"response": ...}
    assert result.error is None and TOOLS_AS_TEXT not in result.note
    assert result.tool_calls or not result.text.lstrip().startswith('{"response"'), result


def test_the_template_override_keeps_the_old_behaviour(make_engine):
    engine = make_engine(tool_format="template")
    assert engine.model_info.tool_format.startswith("none:")
    result = engine.submit(request(max_tokens=8)).result(timeout=300)
    assert result.tool_calls == () and result.note == TOOLS_AS_TEXT


def test_a_template_with_its_own_format_keeps_it(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant)
    assert engine.model_info.tool_format == "the template's own (hermes format)"
    assert "<tools>" in engine.render_prompt(request()) and "You can call" not in engine.render_prompt(request())


def test_history_calls_and_results_are_written_as_the_generic_json():
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    messages = generic.prompt_messages([{"role": "system", "content": "Be brief."}, *QUESTION,
                                        {"role": "assistant", "content": "", "tool_calls": [call]},
                                        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}], [WEATHER])
    assert messages[0]["content"].startswith("Be brief.\n\n" + generic.RESPOND + "\n\nYou can call")
    assert json.loads(messages[2]["content"]) == {"tool_calls": [{"name": "get_weather",
                                                                  "arguments": {"city": "Paris"}, "id": "call_1"}]}
    assert messages[3]["role"] == "user"
    assert json.loads(messages[3]["content"]) == {"tool_response": {"content": "18 C", "tool_call_id": "call_1"}}


def test_replies_parse_as_llama_cpp_parses_the_generic_format():
    one = parse('{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}', GENERIC, tools=(WEATHER,))
    assert [(c.name, json.loads(c.arguments)) for c in one.tool_calls] == [("get_weather", {"city": "Paris"})]
    two = parse('{"tool_calls": [{"name": "get_time", "arguments": {}, "id": "abcd"}, '
                '{"name": "get_weather", "arguments": {"city": "Rome"}, "id": "efgh"}]}', GENERIC)
    assert [(c.id, c.name) for c in two.tool_calls] == [("abcd", "get_time"), ("efgh", "get_weather")]
    assert parse('{"response": "Hello"}', GENERIC).content == "Hello"
    assert parse('{"response": "Hel', GENERIC, partial=True).content == "Hel"  # an answer streams as it grows
    assert parse('{"response": "a\\u00', GENERIC, partial=True).content == "a"
    assert parse("plain text", GENERIC).content == "plain text"
    partial = parse('{"tool_call": {"name": "get_weather", "arguments": {"ci', GENERIC, partial=True)
    assert partial.content == "" and partial.tool_calls[0].name == "get_weather"


# The reference: llama.cpp's common/chat.cpp before its autoparser (as ollama/ollama vendors it at
# llama/llama.cpp/common/chat.cpp): common_chat_params_init_generic / common_chat_parse_generic, with minja's
# chat-template.hpp polyfills (llama/llama.cpp/vendor/minja/chat-template.hpp).
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
TOOLS_AS_MINJA_DUMPS_THEM = """[
  {
    "type": "function",
    "function": {
      "name": "get_time",
      "description": "",
      "parameters": {
        "type": "object",
        "properties": {
EMPTY        }
      }
    }
  }
]""".replace("EMPTY", " " * 10 + "\n")  # minja writes an empty object's line breaks and indent
EXAMPLE_AS_NLOHMANN_DUMPS_IT = """{
  "tool_calls": [
    {
      "name": "tool_name",
      "arguments": {
        "arg1": "some_value"
      },
      "id": "call_1___"
    }
  ]
}"""


def test_the_system_text_is_llama_cpps_word_for_word():
    """add_system(RESPOND) in common_chat_params_init_generic, then minja's tools polyfill: the tools dumped by
    minja's Value::dump(2), whose empty object keeps its line breaks, and the template's example call."""
    assert generic.RESPOND == ("Respond in JSON format, either with `tool_call` (a request to call tools) or with "
                               "`response` reply to the user's request")
    (system, _) = generic.prompt_messages([{"role": "system", "content": "Be brief."}, *QUESTION], [TIME])
    assert system == {"role": "system", "content": (
        "Be brief.\n\n" + generic.RESPOND + "\n\n"
        "You can call any of the following tools to satisfy the user's requests: " + TOOLS_AS_MINJA_DUMPS_THEM
        + "\n\nExample tool call syntax:\n\n" + EXAMPLE_AS_NLOHMANN_DUMPS_IT + "\n\n")}
    (system, user) = generic.prompt_messages(QUESTION, [TIME], example=None)  # no example: none shown
    assert system["content"] == generic.RESPOND + "\n\nYou can call any of the following tools to satisfy the " \
                                                  "user's requests: " + TOOLS_AS_MINJA_DUMPS_THEM
    assert user == QUESTION[0]


def test_the_example_call_is_what_the_template_writes_for_it():
    """minja's tool_call_example_: the polyfilled example message as the template renders it, after the
    generation prompt, the end-of-sequence token dropped."""
    from app.engine.chat.template.render import ChatTemplate

    chatml = ChatTemplate(CHATML, "", "<|im_end|>")
    example = generic.call_example(lambda msgs, gen: chatml.render(msgs, add_generation_prompt=gen), "<|im_end|>")
    assert example == EXAMPLE_AS_NLOHMANN_DUMPS_IT == generic.EXAMPLE
    gemma_like = ChatTemplate(CHATML.replace("<|im_end|>", "<end_of_turn>"), "<bos>", "<eos>")
    example = generic.call_example(lambda msgs, gen: gemma_like.render(msgs, add_generation_prompt=gen), "<eos>")
    assert example == EXAMPLE_AS_NLOHMANN_DUMPS_IT + "<end_of_turn>\n"  # not the EOS: kept, as minja keeps it


def test_the_embedded_models_prompt_shows_llama_cpps_example(make_engine):
    prompt = make_engine().render_prompt(request())
    assert "\n\nExample tool call syntax:\n\n" + EXAMPLE_AS_NLOHMANN_DUMPS_IT + "\n\n" in prompt


def test_the_schema_is_llama_cpps():
    from app.engine.chat.grammar import generic as grammar

    weather = {"type": "object", "properties": {"name": {"type": "string", "const": "get_weather"},
                                                "arguments": WEATHER["function"]["parameters"]},
               "required": ["name", "arguments"], "description": "The current weather in a city"}
    assert grammar.schema([WEATHER], parallel=False, required=True) == {
        "type": "object", "properties": {"tool_call": weather}, "required": ["tool_call"]}
    with_id = {**weather, "properties": {**weather["properties"], "id": {"type": "string", "minLength": 4}},
               "required": ["name", "arguments", "id"]}
    assert grammar.schema([WEATHER], parallel=True, required=False) == {"anyOf": [
        {"type": "object", "properties": {"tool_calls": {"type": "array", "items": with_id, "minItems": 1}},
         "required": ["tool_calls"]},
        {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}]}
    assert list(grammar.schema([WEATHER, TIME], False, True)["properties"]["tool_call"]) == ["anyOf"]


def test_parallel_calls_need_a_template_that_renders_two():
    """common_chat_templates_apply_jinja turns parallel_tool_calls off when the template does not render two
    calls (supports_parallel_tool_calls): the embedded model's ChatML-like template renders none."""
    from app.engine.chat.grammar.tool_choice import tool_grammar

    asked = request(tool_choice="required", parallel_tool_calls=True)
    gbnf = tool_grammar(asked, CHATML, generic=True).gbnf
    assert "tool_call" in gbnf and "tool_calls" not in gbnf


def test_arguments_are_re_serialised_as_llama_cpps_parser_dumps_them():
    """consume_json_with_dumped_args: the arguments become nlohmann's compact dump() of what the model wrote."""
    one = parse('{"tool_call": {"name": "get_weather", "arguments": {"city" :  "Par\\u00eds", "n": 1.50}}}',
                GENERIC)
    assert [c.arguments for c in one.tool_calls] == ['{"city":"París","n":1.5}']
    as_string = parse('{"tool_call": {"name": "f", "arguments": "{\\"a\\": 1}"}}', GENERIC)
    assert as_string.tool_calls[0].arguments == '"{\\"a\\": 1}"'  # a string stays a (dumped) string
    text = '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Rome", "days": [1, 2]}, "id": "efgh"}]}'
    final = parse(text, GENERIC).tool_calls[0].arguments
    assert final == '{"city":"Rome","days":[1,2]}'
    for cut in range(len(text)):  # while it streams, each call's arguments are a prefix of the final dump
        for call in parse(text[:cut], GENERIC, partial=True).tool_calls:
            assert call.name == "get_weather" and final.startswith(call.arguments), text[:cut]


def test_what_llama_cpps_parser_rejects_is_content():
    """common_chat_parse falls back to the whole text as content when the generic parse fails; `tool_calls` is
    read before `tool_call`."""
    for text in ('{"tool_call": {"arguments": {}}}', '{"answer": "yes"}', '["get_time"]'):
        assert parse(text, GENERIC) == parse(text, GENERIC, calls=False), text
        assert parse(text, GENERIC).content == text
    both = parse('{"tool_call": {"name": "a", "arguments": {}}, "tool_calls": [{"name": "b", "arguments": {}}]}',
                 GENERIC)
    assert [c.name for c in both.tool_calls] == ["b"]
    assert parse('{"response": {"n": 1}}', GENERIC).content == '{\n  "n": 1\n}'
