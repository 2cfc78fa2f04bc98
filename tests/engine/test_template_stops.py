"""Stop strings a chat template's llama.cpp handler adds (detect.template_stops): Laguna's `</assistant>` and Ling
3's `<|role_end|>` end a chat reply even when the model spells them out as text tokens, as llama-server stops
there; a raw prompt, which no template renders, keeps them as text. Real SmolLM2 135M carrying the template, its
output forced by a grammar."""

import pytest

from app.engine import GenerationRequest
from app.engine.chat.parse.detect import template_stops
from tests.conftest import GREEDY, template_variant
from tests.fixtures.servers import llama_cpp_templates

SPELLED = 'root ::= "Hi" "</assistant>" " more"'


@pytest.fixture(scope="module")
def laguna(model_path, tmp_path_factory):
    return template_variant(model_path, tmp_path_factory, "poolside-Laguna-S-2.1")


def test_the_handlers_stop_strings_are_llama_cpps():
    templates = llama_cpp_templates()
    if not templates:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    assert template_stops(templates["poolside-Laguna-XS-2.1"]) == ("</assistant>",)
    assert template_stops(templates["inclusionai-ling-3.0-flash"]) == ("<|role_end|>",)
    assert template_stops(templates["GLM-4.6"]) == () and template_stops(None) == ()


def test_a_chat_reply_stops_at_the_spelled_out_end_of_turn(make_engine, laguna):
    engine = make_engine(model_path=laguna)
    chat = GenerationRequest(messages=[{"role": "user", "content": "Hello"}], sampling=GREEDY, max_tokens=24,
                             grammar=SPELLED, thinking=False)
    raw = GenerationRequest(prompt="Hello", sampling=GREEDY, max_tokens=24, grammar=SPELLED)
    said, kept = engine.submit(chat).result(timeout=120), engine.submit(raw).result(timeout=120)
    assert (said.text, said.finish_reason, said.error) == ("Hi", "stop", None), said
    assert kept.text == "Hi</assistant> more", kept
