"""Constrained tool calls on the real model (SmolLM2 135M carrying Qwen2.5's template, whose calls are Hermes'
`<tool_call>` JSON): with tool_choice required the reply is a well-formed call whose arguments validate against the
tool's schema; a named function is the one called; with auto the grammar waits for the trigger (lazy) and then
holds the model to a call; with none there is no grammar."""

import json

import jsonschema
import numpy as np
import pytest

from app.engine import GenerationRequest, SamplingParams
from app.engine.chat.grammar.formats import tool_gbnf
from app.engine.chat.grammar.tool_choice import template_format
from app.engine.native import LlamaModel
from app.engine.sampling.constraint import GrammarConstraint
from app.engine.sampling.grammar import lazy_sampler, tool_constraint
from tests.fixtures.servers import llama_cpp_templates

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a timezone",
    "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def ask(engine, **fields):
    fields.setdefault("max_tokens", 120)
    request = GenerationRequest(messages=QUESTION, sampling=SamplingParams(temperature=0.0), tools=(WEATHER, TIME),
                                **fields)
    return engine.submit(request).result(timeout=120)


def test_required_makes_the_reply_a_call_that_validates_against_its_schema(make_engine, qwen_variant):
    engine = make_engine(model_path=qwen_variant, n_slots=2)
    result = ask(engine, tool_choice="required", tool_call_first=True, parallel_tool_calls=False)
    assert result.finish_reason == "tool_calls" and len(result.tool_calls) == 1, result  # parsed (chat_parse)
    call = result.tool_calls[0]
    tool = {"get_weather": WEATHER, "get_time": TIME}[call["name"]]
    jsonschema.validate(json.loads(call["arguments"]), tool["function"]["parameters"])
    named = ask(engine, tool_choice="get_time", tool_call_first=True, parallel_tool_calls=False).tool_calls
    assert [c["name"] for c in named] == ["get_time"]
    jsonschema.validate(json.loads(named[0]["arguments"]), TIME["function"]["parameters"])
    assert not ask(engine, tool_choice="none", max_tokens=24).text.startswith("<tool_call>")


def test_the_auto_grammar_waits_for_the_trigger_then_allows_only_a_call(qwen_variant):
    model = LlamaModel(qwen_variant)
    try:
        assert template_format(model.chat_template()) == "hermes"
        gbnf = tool_gbnf("hermes", (WEATHER,), parallel=False)
        constraint = GrammarConstraint(lazy_sampler(model, gbnf, ("<tool_call>",)), model.eog_ids)
        words = ["Hello", "{", " {", "<"]
        ids = np.array([model.tokenize(w, add_special=False)[0] for w in words])
        assert constraint.allowed(ids).all()  # free text until the trigger
        for token in model.tokenize("Let me check. <tool_call>\n", add_special=False):
            constraint.accept(token)
        assert dict(zip(words, constraint.allowed(ids).tolist(), strict=True)) == {
            "Hello": False, "{": True, " {": False, "<": False}  # inside the call: its JSON, nothing else
        assert not constraint.allowed(np.array(model.eog_ids[:1])).any()  # the call is not complete
        constraint.free()
    finally:
        model.close()


def test_required_allows_text_before_the_call_as_llama_server_does(qwen_variant):
    """llama-server's required grammar (common/chat-auto-parser-generator.cpp: `until(trigger)? tool-calls`): any
    text without the trigger, then the calls, and no end before a call; `tool_call_first` starts with the call."""
    model = LlamaModel(qwen_variant)
    words = ["Hello", "{", "<"]
    ids = np.array([model.tokenize(w, add_special=False)[0] for w in words])
    eog = np.array(model.eog_ids[:1])
    try:
        request = GenerationRequest(messages=QUESTION, tools=(WEATHER,), tool_choice="required")
        constraint = tool_constraint(model, request, model.chat_template())
        assert constraint.allowed(ids).all() and not constraint.allowed(eog).any()
        for token in model.tokenize("Let me check. <tool_call>\n", add_special=False):
            constraint.accept(token)
        assert dict(zip(words, constraint.allowed(ids).tolist(), strict=True)) == {"Hello": False, "{": True,
                                                                                   "<": False}
        constraint.free()
        first = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=(WEATHER,), tool_choice="required",
                                                         tool_call_first=True), model.chat_template())
        assert dict(zip(words, first.allowed(ids).tolist(), strict=True)) == {"Hello": False, "{": False, "<": True}
        first.free()
    finally:
        model.close()


def test_parallel_calls_left_out_mean_what_the_template_can_render_as_in_llama_server(qwen_variant):
    """A request without `parallel_tool_calls` gets llama-server's default (server-common.cpp: the template's
    `supports_parallel_tool_calls`, which Qwen 2.5's has): a second call may follow the first; with False, not.
    (The call-first grammar: llama-server's Hermes grammar repeats calls whatever the request says.)"""
    model = LlamaModel(qwen_variant)
    call = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "CET"}}\n</tool_call>'
    second = np.array(model.tokenize("<", add_special=False)[:1])
    taken = {}
    try:
        for parallel in (None, False, True):
            request = GenerationRequest(messages=QUESTION, tools=(WEATHER, TIME), parallel_tool_calls=parallel,
                                        tool_choice="required", tool_call_first=True)
            constraint = tool_constraint(model, request, model.chat_template())
            for token in model.tokenize(call, add_special=False):
                constraint.accept(token)
            taken[parallel] = bool(constraint.allowed(second).all())
            constraint.free()
    finally:
        model.close()
    assert taken == {None: True, False: False, True: True}


def test_the_auto_trigger_is_llama_servers_word_as_the_template_writes_it(qwen_variant):
    """llama-server's lazy trigger for Qwen 2.5 is `<tool_call>\\n` (its template analysis keeps the newline the
    template writes after the marker): `<tool_call>` followed by anything else is still free text."""
    model = LlamaModel(qwen_variant)
    words = ["s", "\n", "Hello"]
    ids = np.array([model.tokenize(w, add_special=False)[0] for w in words])
    try:
        constraint = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=(WEATHER,)),
                                     model.chat_template())
        for token in model.tokenize("Use <tool_call>", add_special=False):
            constraint.accept(token)
        assert constraint.allowed(ids).all()  # not triggered yet
        for token in model.tokenize("\n", add_special=False):
            constraint.accept(token)
        assert dict(zip(words, constraint.allowed(ids).tolist(), strict=True)) == {
            "s": False, "\n": True, "Hello": False}  # triggered: the call's `space`, then its JSON
        constraint.free()
    finally:
        model.close()


def test_command_r7b_required_allows_no_free_text_before_the_call_as_in_llama_server(model_path):
    """Command R7B's template always wraps its content in <|START_RESPONSE|>, so llama-server's required grammar
    allows before the calls a thinking block and one wrapped reply, no free text (build_tool_parser_json_native:
    reasoning? (START until(END) END)? tool-calls). Traced on the parity test's required case (2026-11-26): after
    "\n\n" llama-server wrote <|START_THINKING|>, Chorus "##" (its grammar let any text come first)."""
    source = llama_cpp_templates().get("CohereForAI-c4ai-command-r7b-12-2024-tool_use")
    if source is None:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    model = LlamaModel(model_path)
    words = {"##": False, "Hello": False, "<|START_THINKING|>": True, "<|START_RESPONSE|>": True,
             "<|START_ACTION|>": True}
    ids = np.array([model.tokenize(w, add_special=False)[0] for w in words])
    try:
        constraint = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=(WEATHER,),
                                                              tool_choice="required"), source)
        for token in model.tokenize("\n\n", add_special=False):
            constraint.accept(token)
        assert dict(zip(words, constraint.allowed(ids).tolist(), strict=True)) == words
        constraint.free()
    finally:
        model.close()
