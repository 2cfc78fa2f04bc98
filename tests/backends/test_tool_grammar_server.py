"""Chorus's tool-call grammars (app/engine/chat/grammar/formats.py) against the grammar llama-server reports for
the same template and tools (`-lv 10`: `__verbose.generation_settings.grammar` of a /v1/chat/completions reply).
The texts differ (rule numbering, llama-cpp-python's older JSON converter, Chorus's tighter whitespace), so the check is
on the language, on sampled strings, both ways:

- calls written by SmolLM2 under Chorus's grammar (greedy and two seeds) are accepted by llama-server's;
- a call written by SmolLM2 under llama-server's lazy grammar (greedy, from its trigger on) is accepted by
  Chorus's, where the server applies a lazy grammar ("auto"); without one its required grammar is used, after
  the generation prompt it starts with.

Where llama-server's grammar itself refuses a well-formed call, the format is in SERVER_BUGS with the reason; its
test asserts the refusal is still there (a fixed server fails it, so the entry gets removed).

Chorus's default required grammar (tool_grammar.required_gbnf: text, then calls, in llama-server's shape) is
compared with llama-server's required grammar token by token over prose followed by the template's own call
(`test_required_grammars_read_text_and_calls_as_llama_servers_does`).

Measured 2026-11-26, after Chorus's JSON whitespace became llama.cpp's current converter's (tool_gbnf.CurrentSpacing):
Llama 3.x (JSON alone, no markers) takes the same calls; the other formats still differ (strict xfails, DIFFERENT):
see DIFFERENT."""

import json
import os
import re
import tempfile
from pathlib import Path

import httpx
import llama_cpp
import pytest

from app.engine import GenerationRequest, SamplingParams
from app.engine.chat.grammar.formats import tool_gbnf
from app.engine.chat.grammar.handlers import regex_escape
from app.engine.chat.grammar.tool_choice import NO_LEAD, required_gbnf
from app.engine.chat.template.reasoning import opens_thinking
from app.engine.chat.template.render import ChatTemplate
from app.engine.native import LlamaModel
from app.engine.sampling.constraint import GrammarConstraint
from app.engine.sampling.grammar import grammar_sampler, lazy_sampler, tool_constraint
from tests.engine.test_tool_grammar_formats import MAX_TOKENS, TEMPLATES, TIME, WEATHER
from tests.fixtures.servers import llama_cpp_templates

pytestmark = pytest.mark.servers

# Formats whose template gets no tool grammar at all from llama-server (its analysis finds no call format in
# them, so its parser falls back to content): nothing to compare.
NO_SERVER_GRAMMAR = {"granite", "deepseek-r1"}
SERVER_BUGS = {
    "magistral": "its tool rule asks for `[ARGS]` twice (name suffix and arguments start): "
                 "`(\"\" \"get_weather\" \"[ARGS]\") (\"[CALL_ID]\" until)? \"[ARGS]\"`",
}
# Chorus's call-first grammar of these is llama-server's trigger rule (tool_gbnf_native, SERVER_SHAPES), or takes
# the same calls (Command R+ and Functionary v3.2, measured 2026-11-27 00:45-01:00 UTC against their required
# grammars: llama-server's one-token "auto" reply is an error for both, which had ended Functionary's case in a
# KeyError, hidden by its DIFFERENT xfail)
SAME = {"llama-3.x", "apertus", "gigachat-v3", "gigachat-v3.1", "lfm2", "gemma4", "gpt-oss", "command-r-plus",
        "functionary-v3.2", "solar-open"}
DIFFERENT = ("still differ after the JSON whitespace fix (measured 2026-11-26, not yet narrowed down); the "
             "formats that pass differ from these by having no markers, so suspected: the whitespace around markers "
             "(llama-server's `space`, Chorus's one optional blank or newline)")
# Measured 2026-11-27 00:30 UTC: every call Chorus's grammar wrote is taken by llama-server's; the other way fails.
DSML_STRINGS = ("llama.cpp's DSML string value is any text up to </｜DSML｜parameter> (common/parsers/"
                "deepseek.cpp reads a string parameter with `until`, its maxLength unused), so under llama-server's "
                "grammar SmolLM2 writes a runaway city (newlines, `<｜DSML｜invoke name=\"gab\">` lines) to "
                "max_tokens; Chorus's bounds a string with a maxLength to that many characters on one line, as its "
                "other tagged grammars, and refuses it")
# Traced differences of one format (the others that differ: DIFFERENT)
CALL_FIRST_DIFFER = {
    "deepseek-v3.2": DSML_STRINGS, "deepseek-v4": DSML_STRINGS,
    "minicpm5": "llama-server's grammar takes a tool's parameters any number of times in any order (minicpm5.cpp), "
                "and under it SmolLM2 writes <param name=\"days\"> again and again until max_tokens; Chorus's "
                "call-first grammar takes each at most once, so it refuses that text (traced 2026-11-27)",
    "hy3": "every call Chorus's grammar wrote is taken by llama-server's; under llama-server's lazy grammar SmolLM2 "
           "writes blank lines where its `space` allows them (`<tool_calls:opensource>\n\n<tool_call:opensource>"
           "\n\nget_weather\n\n<tool_sep:opensource>\n\n`) and a city that runs to max_tokens (a string "
           "parameter is `until(</arg_value:opensource>\n)`); Chorus's call-first grammar has the template's own "
           "layout and bounds a string with a maxLength, so it refuses that text at the second newline (traced "
           "2026-11-27 05:40 UTC)",
    "minimax-m1": "every call Chorus's grammar wrote is taken by llama-server's; the other way fails on whitespace "
                  "only: llama-server's `space` after `<tool_calls>\\n` and before `</tool_calls>` lets SmolLM2 "
                  "write `<tool_calls>\\n\\n{` and `}\\n\\n</tool_calls>`, Chorus's call-first grammar has the "
                  "template's one newline there (and takes that call with single ones). Traced 2026-11-27 05:30 "
                  "UTC; its required and lazy grammars are llama-server's",
}
TOOLS = (WEATHER, TIME)
# Formats whose grammar (llama.cpp's own) lets SmolLM2 run away until max_tokens (Gemma 4's dictionary keys, GPT-OSS's
# constraint type): a text cut there need only be taken so far.
RUNAWAY = {"gemma4", "gpt-oss"}
# What Chorus's call-first grammar writes before the trigger, where llama-server's lazy grammar leaves the text free:
# Kimi K3's generation prompt opens the think section, which the call must follow (common/parsers/kimi-k3.cpp)
LEAD = {"kimi-k3": "<|close|>think<|sep|>"}
# Chorus's call-first grammar is deliberately tighter than llama-server's trigger rule, so only its calls are checked
# against llama-server's, not the other way round (traced 2026-11-27: SmolLM2 under kimi-k3.cpp's rule writes prose
# in a call's attributes, its `until(<|sep|>)`, until max_tokens; Chorus's has the template's index="N" there).
# Solar Open: llama-server's lazy root is `tool-call | tool-calls` (both trigger rules of build_tool_parser_tag_json),
# so read whole, not lazily, it also takes a bare <|tool_call:begin|>... call, which SmolLM2 writes under it and its
# parser reads as text (the calls must follow <|tool_calls|>); after its trigger <|tool_calls|> only `tool-calls`
# can follow, Chorus's whole root (traced 2026-11-27 05:35 UTC)
TIGHTER = {"kimi-k3", "solar-open"}
TAKEN = SAME | set(LEAD)  # formats whose grammars take the same calls
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


_REPLIES: dict[str, dict[str, dict]] = {}


def server_replies(start_llama_server, source: str) -> dict[str, dict]:
    """llama-server's replies (`-lv 10`: with `__verbose`, unless an error) to a one-token request with the tools
    under this template, per tool_choice ("auto", "required"). One server per template, asked once in a worker
    (a format's cases share an xdist group: `case`): the three tests below read the same replies (a server
    started per test cost about a quarter of this file's time: 740 s before, 560 s after)."""
    if source not in _REPLIES:
        template = Path(tempfile.mkstemp(suffix=".jinja")[1])
        template.write_text(source)
        try:  # 2048: GigaChat's prompt with the tools is 1205 tokens
            server = start_llama_server("--jinja", "--chat-template-file", str(template), "-lv", "10", "-np", "1",
                                        "-c", "2048")
            _REPLIES[source] = {choice: httpx.post(f"{server.url}/chat/completions", timeout=120, json={
                "messages": QUESTION, "tools": list(TOOLS), "tool_choice": choice, "parallel_tool_calls": False,
                "max_tokens": 1, "temperature": 0}).json() for choice in ("auto", "required")}
        finally:
            template.unlink()
    return _REPLIES[source]


def server_grammar(start_llama_server, fmt: str) -> tuple[str, str]:
    """(grammar, prefix): llama-server's tool grammar for the format's template ("auto" when lazy, else
    "required") and the text it expects before the call (the generation prompt of a required grammar)."""
    settings = {}
    for reply in server_replies(start_llama_server, llama_cpp_templates()[TEMPLATES[fmt]]).values():
        if "__verbose" not in reply:  # an error reply (Command R+'s "auto": its parser refused the token)
            continue
        settings = reply["__verbose"]["generation_settings"]
        if settings["grammar"]:
            break
    assert settings.get("grammar"), f"llama-server reported no tool grammar for {fmt}"
    grammar = settings["grammar"]
    prefix = ""
    if not settings["grammar_lazy"]:  # root ::= "GENERATION PROMPT" space until-N? tool-call...
        first = re.search(r'^root ::= ("(?:[^"\\]|\\.)*")', grammar, re.M)
        prefix = json.loads(first.group(1)) if first else ""
        grammar = re.sub(r"^root ::= .*$", lambda m: re.sub(r' until-\d+\?', "", m.group(0)), grammar, flags=re.M)
    return grammar, prefix


def accepts(model, gbnf: str, written: tuple[str, bool]) -> bool:
    """Whether llama.cpp's grammar engine takes the text whole, and may end there (`written`: (text, cut), a
    text cut by max_tokens, where the grammar allowed a runaway name or value, need only be taken so far)."""
    text, cut = written
    constraint = GrammarConstraint(grammar_sampler(model, gbnf), model.eog_ids)
    try:
        for token in model.tokenize(text, add_special=False):
            if not constraint.allowed([token]).all():
                return False
            constraint.accept(token)
        return cut or bool(constraint.allowed(model.eog_ids[:1]).all())
    finally:
        constraint.free()


def samples(engine, asks: list[tuple[str, int | None]], max_tokens: int) -> list[tuple[str, bool]]:
    """(text, cut by max_tokens) for each (grammar, seed: None for greedy), all submitted at once: the engine
    decodes them in one batch, and its reproducible mode gives each the tokens it gets alone
    (tests/engine/test_reproducible.py); one after another, the decode steps were most of this module's time."""
    def request(gbnf: str, seed: int | None) -> GenerationRequest:
        sampling = SamplingParams(temperature=0.0) if seed is None else SamplingParams(temperature=1.0, seed=seed)
        return GenerationRequest(messages=QUESTION, grammar=gbnf, sampling=sampling, max_tokens=max_tokens)
    handles = [engine.submit(request(gbnf, seed)) for gbnf, seed in asks]
    return [(r.text, r.finish_reason == "length") for r in (handle.result(timeout=300) for handle in handles)]


def case(fmt: str, *marks) -> pytest.param:
    """A format's case, in its format's xdist group: the module's tests read one server's replies for a
    template (`server_replies`), asked for once in a worker."""
    return pytest.param(fmt, marks=[pytest.mark.xdist_group(f"grammar-{fmt}"), *marks])


@pytest.mark.parametrize("fmt", [case(f) if f in SERVER_BUGS or f in TAKEN else case(f, pytest.mark.xfail(
    reason=CALL_FIRST_DIFFER.get(f, DIFFERENT), strict=True)) for f in TEMPLATES if f not in NO_SERVER_GRAMMAR])
def test_chorus_and_llama_server_grammars_take_the_same_calls(fmt, start_llama_server, make_engine, model_path):
    if not llama_cpp_templates():
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    theirs, prefix = server_grammar(start_llama_server, fmt)
    ours = tool_gbnf(fmt, TOOLS, parallel=False)
    runaway, limit = fmt in RUNAWAY, MAX_TOKENS.get(fmt, 160)
    back_too = fmt not in SERVER_BUGS and not prefix and fmt not in TIGHTER  # a call under theirs, read by ours
    engine = make_engine(n_slots=4)
    sampled = samples(engine, [(ours, seed) for seed in (None, 1, 2)] + ([(theirs, None)] if back_too else []),
                      limit)
    written = [(text, cut and runaway) for text, cut in sampled[:3]]
    model = LlamaModel(model_path)
    try:
        lead = LEAD.get(fmt, "")
        taken = [accepts(model, theirs, (prefix + text.removeprefix(lead), cut)) for text, cut in written]
        if fmt in SERVER_BUGS:
            assert not any(taken), (fmt, written)
            return
        assert all(taken), [t for t, ok in zip(written, taken, strict=True) if not ok]
        if back_too:
            back, cut = sampled[3]
            assert accepts(model, ours, (lead + back, cut and runaway)), back
    finally:
        model.close()


# llama-server's required grammar refuses a call its template writes (Chorus's stays valid: docs/tools.md).
REQUIRED_BUGS = {
    "magistral": "Mistral Small 3.2's tool rule asks for `[ARGS]` twice",
    "command-r7b": "a comma makes the optional \"tool_call_id\" field mandatory",
}


def reads(model, gbnf: str | GrammarConstraint, tokens: list[int], prefill: list[int] = ()) -> list[str]:
    """Per token of `tokens`: "end" (the text so far is complete), "on" (it may go on), or "no" (refused; the
    rest is not read). `gbnf`: a grammar's text, or a constraint (this frees it)."""
    constraint = gbnf if isinstance(gbnf, GrammarConstraint) else GrammarConstraint(grammar_sampler(model, gbnf),
                                                                                    model.eog_ids)
    verdicts = []
    try:
        for token in prefill:
            llama_cpp.llama_sampler_accept(constraint.ptr, token)
        for token in tokens:
            if not constraint.allowed([token]).all():
                return [*verdicts, "no"]
            constraint.accept(token)
            verdicts.append("end" if constraint.allowed(model.eog_ids[:1]).all() else "on")
        return verdicts
    finally:
        constraint.free()


NO_VERBOSE = {"command-r7b": "llama-server's reply to this one-token required request has no `__verbose` (an "
                             "error reply), so its grammar is not read here; not traced (2026-11-26)"}


def template_call(source: str) -> tuple[str, str]:
    """(prompt, the template's own rendering of an assistant call to get_weather after it)."""
    chat = ChatTemplate(source, "", "")
    head = chat.render(QUESTION, tools=list(TOOLS))
    call = {"id": "a1b2c3d4e", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}
    whole = chat.render([*QUESTION, {"role": "assistant", "content": "", "tool_calls": [call]}], tools=list(TOOLS),
                        add_generation_prompt=False)
    return head, whole[len(os.path.commonprefix([head, whole])):]


def server_settings(start_llama_server, source: str, choice: str) -> dict:
    """llama-server's generation settings (`-lv 10`) for a one-token request with this template and choice."""
    reply = server_replies(start_llama_server, source)[choice]
    assert "__verbose" in reply, reply
    return reply["__verbose"]["generation_settings"]


def server_triggers(triggers: list[dict]) -> tuple[str, ...]:
    """llama-server's grammar triggers as common/sampling.cpp passes them to llama.cpp (1: a word, escaped; 2: a
    pattern; 3: a pattern of the whole output)."""
    assert all(t["type"] in (1, 2, 3) for t in triggers), triggers  # no token triggers with SmolLM2's vocabulary
    return tuple(regex_escape(t["value"]) if t["type"] == 1 else t["value"] if t["type"] == 2
                 else "^" + t["value"].strip("^$") + "$" for t in triggers)


# Expected to differ (docs/tools.md, "Constrained calls"): llama-server's lazy grammar and Chorus's.
AUTO_DIFFER = {
    "magistral": SERVER_BUGS["magistral"],
    "granite": "llama-server applies no grammar to Granite 3.3 (its analysis finds no call format); Chorus does",
    "command-r-plus": "llama-server's reply to this one-token request is an error (HTTP 500: its parser takes Command "
                      "R+'s content only wrapped in <|CHATBOT_TOKEN|>...<|END_OF_TURN_TOKEN|>, and SmolLM2's first "
                      "token is not), so its grammar is not read here; read from its -v log instead (2026-11-27): "
                      "the same tool-call rule as Chorus's, the same trigger \"Action:\\n```json\\n\"",
}


def _auto_case(fmt: str):
    """Measured 2026-11-26 (17:43 UTC the six formats added then, 18:19 the others): the same verdicts for every
    format but the two expected to differ."""
    if fmt in AUTO_DIFFER:
        return case(fmt, pytest.mark.xfail(reason=AUTO_DIFFER[fmt], strict=True))
    return case(fmt)


@pytest.mark.parametrize("fmt", [_auto_case(f) for f in TEMPLATES if f not in ("llama-3.x", "functionary-v3.2")])
def test_auto_grammars_and_triggers_read_text_and_calls_as_llama_servers_do(fmt, start_llama_server, model_path):
    """Chorus's lazy ("auto") grammar with its triggers against llama-server's (its grammar and
    `grammar_triggers`, through the same llama.cpp lazy sampler), token by token over prose and the template's
    own call after it: free text until the trigger, then the same verdict at every token. (Llama 3.x and
    Functionary v3.2 have no lazy grammar on either side.)"""
    source = llama_cpp_templates().get(TEMPLATES[fmt])
    if source is None:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    settings = server_settings(start_llama_server, source, "auto")
    assert settings["grammar"] and settings["grammar_lazy"], settings
    _, rendered = template_call(source)
    model = LlamaModel(model_path)
    try:
        text = model.tokenize("Let me check that. " + rendered.lstrip(), add_special=False)
        theirs = GrammarConstraint(lazy_sampler(model, settings["grammar"],
                                                server_triggers(settings["grammar_triggers"])), model.eog_ids)
        ours = tool_constraint(model, GenerationRequest(messages=QUESTION, tools=TOOLS, parallel_tool_calls=False),
                               source)
        theirs_reads, ours_reads = reads(model, theirs, text), reads(model, ours, text)
    finally:
        model.close()
    assert ours_reads == theirs_reads, rendered


@pytest.mark.parametrize("fmt", [case(f, pytest.mark.xfail(reason=NO_VERBOSE[f], strict=True))
                                 if f in NO_VERBOSE else case(f) for f in TEMPLATES if f not in NO_LEAD])
def test_required_grammars_read_text_and_calls_as_llama_servers_does(fmt, start_llama_server, model_path):
    """Chorus's default required grammar against llama-server's, token by token over some prose and the
    template's own rendering of an assistant call after it: at every token both say the same (refused, may go
    on, complete). llama-server's grammar is fed its generation prompt first, as it is (common/sampling.cpp)."""
    source = llama_cpp_templates().get(TEMPLATES[fmt])
    if source is None:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    settings = server_settings(start_llama_server, source, "required")
    head, rendered = template_call(source)
    ours = required_gbnf(fmt, source, TOOLS, False, opens_thinking(head))
    model = LlamaModel(model_path)
    try:
        prefill = model.tokenize(settings.get("generation_prompt") or "", add_special=False)
        text = model.tokenize("Let me check that. " + rendered.lstrip(), add_special=False)
        theirs_reads = reads(model, settings["grammar"], text, prefill)
        ours_reads = reads(model, ours, text)
    finally:
        model.close()
    if fmt in REQUIRED_BUGS:
        assert "end" not in theirs_reads and "end" in ours_reads, (REQUIRED_BUGS[fmt], rendered)
        return
    assert ours_reads == theirs_reads, rendered
