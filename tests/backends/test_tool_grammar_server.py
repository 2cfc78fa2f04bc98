"""Chorus's tool-call grammars (app/engine/tool_gbnf.py) against the grammar llama-server reports for the same
template and tools (`-lv 10`: `__verbose.generation_settings.grammar` of a /v1/chat/completions reply). The texts
differ (rule numbering, llama-cpp-python's older JSON converter, Chorus's tighter whitespace), so the check is on
the language, on sampled strings, both ways:

- calls written by SmolLM2 under Chorus's grammar (greedy and two seeds) are accepted by llama-server's;
- a call written by SmolLM2 under llama-server's lazy grammar (greedy, from its trigger on) is accepted by
  Chorus's, where the server applies a lazy grammar ("auto"); without one its required grammar is used, after
  the generation prompt it starts with.

Where llama-server's grammar itself refuses a well-formed call, the format is in SERVER_BUGS with the reason; its
test asserts the refusal is still there (a fixed server fails it, so the entry gets removed).

Measured 2026-11-26, after Chorus's JSON whitespace became llama.cpp's current converter's (tool_gbnf.CurrentSpacing):
Llama 3.x (JSON alone, no markers) takes the same calls; the other formats still differ (strict xfails, DIFFERENT):
see DIFFERENT."""

import json
import re
import tempfile
from pathlib import Path

import httpx
import pytest

from app.engine import GenerationRequest, SamplingParams
from app.engine.constraint import GrammarConstraint
from app.engine.grammar import grammar_sampler
from app.engine.native import LlamaModel
from app.engine.tool_gbnf import tool_gbnf
from tests.engine.test_tool_grammar_formats import TEMPLATES, TIME, WEATHER
from tests.servers import llama_cpp_templates

pytestmark = pytest.mark.servers

# Formats whose template gets no tool grammar at all from llama-server (its analysis finds no call format in
# them, so its parser falls back to content): nothing to compare.
NO_SERVER_GRAMMAR = {"granite", "deepseek-r1"}
SERVER_BUGS = {
    "magistral": "its tool rule asks for `[ARGS]` twice (name suffix and arguments start): "
                 "`(\"\" \"get_weather\" \"[ARGS]\") (\"[CALL_ID]\" until)? \"[ARGS]\"`",
}
SAME = {"llama-3.x"}
DIFFERENT = ("still differ after the JSON whitespace fix (measured 2026-11-26, not yet narrowed down); the "
             "formats that pass differ from these by having no markers, so suspected: the whitespace around markers "
             "(llama-server's `space`, Chorus's one optional blank or newline)")
TOOLS = (WEATHER, TIME)
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def server_grammar(start_llama_server, fmt: str) -> tuple[str, str]:
    """(grammar, prefix): llama-server's tool grammar for the format's template ("auto" when lazy, else
    "required") and the text it expects before the call (the generation prompt of a required grammar)."""
    template = Path(tempfile.mkstemp(suffix=".jinja")[1])
    template.write_text(llama_cpp_templates()[TEMPLATES[fmt]])
    try:
        server = start_llama_server("--jinja", "--chat-template-file", str(template), "-lv", "10", "-np", "1",
                                    "-c", "1024")
        for choice in ("auto", "required"):
            reply = httpx.post(f"{server.url}/chat/completions", timeout=120, json={
                "messages": QUESTION, "tools": list(TOOLS), "tool_choice": choice, "parallel_tool_calls": False,
                "max_tokens": 1, "temperature": 0}).json()
            settings = reply["__verbose"]["generation_settings"]
            if settings["grammar"]:
                break
    finally:
        template.unlink()
    grammar = settings["grammar"]
    prefix = ""
    if not settings["grammar_lazy"]:  # root ::= "GENERATION PROMPT" space until-N? tool-call...
        first = re.search(r'^root ::= ("(?:[^"\\]|\\.)*")', grammar, re.M)
        prefix = json.loads(first.group(1)) if first else ""
        grammar = re.sub(r"^root ::= .*$", lambda m: re.sub(r' until-\d+\?', "", m.group(0)), grammar, flags=re.M)
    return grammar, prefix


def accepts(model, gbnf: str, text: str) -> bool:
    """Whether llama.cpp's grammar engine takes `text` whole, and may end there."""
    constraint = GrammarConstraint(grammar_sampler(model, gbnf), model.eog_ids)
    try:
        for token in model.tokenize(text, add_special=False):
            if not constraint.allowed([token]).all():
                return False
            constraint.accept(token)
        return bool(constraint.allowed(model.eog_ids[:1]).all())
    finally:
        constraint.free()


def sample(engine, gbnf: str, seed: int | None) -> str:
    sampling = SamplingParams(temperature=0.0) if seed is None else SamplingParams(temperature=1.0, seed=seed)
    return engine.submit(GenerationRequest(messages=QUESTION, grammar=gbnf, sampling=sampling,
                                           max_tokens=160)).result(timeout=300).text


@pytest.mark.parametrize("fmt", [f if f in SERVER_BUGS or f in SAME else pytest.param(f, marks=pytest.mark.xfail(
    reason=DIFFERENT, strict=True)) for f in TEMPLATES if f not in NO_SERVER_GRAMMAR])
def test_chorus_and_llama_server_grammars_take_the_same_calls(fmt, start_llama_server, make_engine, model_path):
    if not llama_cpp_templates():
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-server`")
    theirs, prefix = server_grammar(start_llama_server, fmt)
    ours = tool_gbnf(fmt, TOOLS, parallel=False)
    engine = make_engine(n_slots=1)
    written = [sample(engine, ours, seed) for seed in (None, 1, 2)]
    model = LlamaModel(model_path)
    try:
        taken = [accepts(model, theirs, prefix + text) for text in written]
        if fmt in SERVER_BUGS:
            assert not any(taken), (fmt, written)
            return
        assert all(taken), [t for t, ok in zip(written, taken, strict=True) if not ok]
        if not prefix:
            back = sample(engine, theirs, None)
            assert accepts(model, ours, back), back
    finally:
        model.close()
