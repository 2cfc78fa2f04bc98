"""Ling 3.0's and Muse Glimmer's tool grammars (app/engine/chat/grammar/ling_muse.py) as llama-server builds them from
their handlers (common/parsers/ling3.cpp, muse-glimmer.cpp), on SmolLM2 135M's vocabulary carrying each template:
what the lazy ("auto") and the required grammars allow before, inside and after a call."""

import numpy as np
import pytest

from app.engine import GenerationRequest
from app.engine.chat.grammar.tool_choice import template_format
from app.engine.native import LlamaModel
from app.engine.sampling.grammar import tool_constraint
from tests.fixtures.gguf_variants import write_variant
from tests.fixtures.servers import llama_cpp_templates

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture(scope="module")
def model_for(model_path, tmp_path_factory):
    templates = llama_cpp_templates()
    if not templates:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    loaded = []

    def load(name: str) -> LlamaModel:
        model = LlamaModel(write_variant(model_path, tmp_path_factory.mktemp("v") / f"{name}.gguf", templates[name]))
        loaded.append(model)
        return model
    yield load
    for model in loaded:
        model.close()


def _allowed(model, constraint, words) -> dict:
    ids = np.array([model.tokenize(w, add_special=False)[0] for w in words])
    return dict(zip(words, constraint.allowed(ids).tolist(), strict=True))


def _feed(model, constraint, text: str) -> None:
    for token in model.tokenize(text, add_special=False):
        constraint.accept(token)


def _ends(model, constraint) -> bool:
    return bool(constraint.allowed(np.array(model.eog_ids[:1])).any())


def test_muse_auto_grammar_starts_at_a_message_to_a_function_not_to_self_or_user(model_for):
    model = model_for("muse-glimmer")
    assert template_format(model.chat_template()) == "muse-glimmer"
    constraint = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=(WEATHER,), tool_choice="auto"),
                                 model.chat_template())
    _feed(model, constraint, " to=self<|message|>Hmm.<|eom|><|start|>assistant to=user<|message|>Sure")
    assert _allowed(model, constraint, ["Hello", "<"]) == {"Hello": True, "<": True}  # not triggered
    _feed(model, constraint, ".<|eom|><|start|>assistant to=get_weather<|message|>")
    assert _allowed(model, constraint, ["Hello", "<"]) == {"Hello": False, "<": True}  # <atem:function_calls>
    assert not _ends(model, constraint)
    _feed(model, constraint, '<atem:function_calls>\n<atem:invoke name="get_weather">\n<atem:parameter name="city">'
                             'Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>')
    assert _ends(model, constraint)
    constraint.free()


def test_muse_required_grammar_allows_thinking_messages_then_only_a_call(model_for):
    model = model_for("muse-glimmer")
    constraint = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=(WEATHER,),
                                                          tool_choice="required"), model.chat_template())
    assert not _ends(model, constraint)
    _feed(model, constraint, " to=self<|message|>The user wants weather.<|eom|><|start|>assistant to=")
    assert _allowed(model, constraint, ["get", "<"]) == {"get": True, "<": True}  # any recipient, then <|message|>
    _feed(model, constraint, "get_weather<|message|>")
    assert _allowed(model, constraint, ["Hello", "<"]) == {"Hello": False, "<": True}
    constraint.free()


def test_ling3_required_grammar_allows_text_then_a_call_then_the_turns_tail(model_for):
    model = model_for("inclusionai-ling-3.0-flash")
    assert template_format(model.chat_template()) == "ling3"
    constraint = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=(WEATHER,),
                                                          tool_choice="required"), model.chat_template())
    assert _allowed(model, constraint, ["Hello", "<"]) == {"Hello": True, "<": True} and not _ends(model, constraint)
    _feed(model, constraint, "Let me look.</think>\n<tool_call>")
    assert _allowed(model, constraint, ["Hello", "get"]) == {"Hello": False, "get": True}
    _feed(model, constraint, "get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>")
    assert _ends(model, constraint) and _allowed(model, constraint, ["Done"]) == {"Done": True}  # the tail
    constraint.free()
