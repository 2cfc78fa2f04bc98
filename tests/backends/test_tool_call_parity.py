"""Tool calls against llama-server (`--jinja`), template by template: for every reference template with a call
format (chat_parse.detect(...).kind != "none"), SmolLM2 135M carrying it (a GGUF variant) gets the same request,
greedy, from Chorus's engine and from llama-server. docs/tools.md, "Parity with llama-server", has the counts.

Two requests per template, one llama-server and one engine each:

- "parse": tool_choice "auto" and a reply prefix that opens a call (the template's own rendering of an assistant
  call up to its argument's value), so the 135M model, started inside a call, writes the rest of it. llama-server
  continues a final assistant message with its own prompt (for a format with thinking markers it first writes an
  empty thinking block), so Chorus's prefix is the rest of llama-server's prompt after Chorus's rendered one:
  the prompt texts are then the same, which is checked (and Chorus tokenizes prompt and prefix as one string,
  as llama-server does). Where the generated tokens are the same too, the parses must be: the calls (names,
  arguments as JSON) when llama-server accepted the reply, and when it refused it (HTTP 500 in the stream: a
  malformed call, or text after the calls) or returned a call left open at the end (not JSON), its last partial
  parse against Chorus's last partial parse (what its engine streamed before the final parse, which drops a
  call it cannot read: docs/tools.md).
- "required": tool_choice "required", no prefix. Both sides constrain the reply with the same grammar: text up
  to the first call, then calls (tool_grammar.py's default, llama-server's shape per format).

The engine runs in llama-server's batch layout (tool_parity_support.SERVER_LAYOUT: the prompt in one ubatch of up to
512 tokens, cold), not in its default reproducible mode, whose < 64-token prompt pieces take another flash-attention
kernel: same tokens, logits ~0.05 nats apart, enough to flip a greedy near-tie of the 135M model (traced
2026-11-26: Llama 3.1's second token, llama-server's "} and the pieces' "}, 0.035 apart there; in this layout
both sides' log-probabilities agree to 1e-4 and the texts match).

Where the generated tokens differ, the case is a strict xfail whose reason names the cause (DIFFER); a case
that starts to match makes the xfail fail, so the table stays true.
"""

from __future__ import annotations

import json
import os

import pytest

from app.engine import Engine, EngineConfig
from app.engine.chat.grammar.tool_choice import template_format
from app.engine.chat.parse import detect
from app.engine.chat.template.render import ChatTemplate
from app.engine.native import LlamaModel
from tests.conftest import TEST_THREADS
from tests.fixtures.gguf_variants import write_variant
from tests.fixtures.servers import llama_cpp_templates, llama_server
from tests.fixtures.tool_parity_support import (
    CALL,
    QUESTION,
    SERVER_LAYOUT,
    WEATHER,
    apply_template,
    as_json,
    chorus_prompt,
    chorus_reply,
    last_partial,
    server_reply,
)

pytestmark = pytest.mark.servers

TEMPLATES = {name: source for name, source in llama_cpp_templates().items() if detect(source).kind != "none"}
MAX_TOKENS = 32

# Why the cases below differ (docs/tools.md, "Parity with llama-server"). Measured 2026-11-26 18:01 UTC with the
# engine in llama-server's batch layout (SERVER_LAYOUT), where "same prompt tokens" now means the same logits.
CONTINUED = ("the prompts differ: llama-server continues a final assistant message from the generation prompt cut at "
             "the thinking tag, which it rewrites (common/chat-auto-parser-generator.cpp); Chorus's reply prefix "
             "continues its whole generation prompt")
LAGUNA_S = ("same text, refused by llama-server; its last streamed call is {\"city\":\"Paris (no closing quote), "
            "Chorus's last partial parse has the quote. Traced 2026-11-26: llama.cpp's mapper adds the quote "
            "only with the whole </arg_value> (tool_arg_close is atomic, common/chat-peg-parser.h), but llama-server "
            "holds back the token >< (its < may begin </assistant>, the stop string of the Laguna patch in "
            "common/chat-diff-analyzer.cpp; server-context.cpp process_token, find_stopping_strings partial), so "
            "its parser never sees Paris</arg_value> alone; with the next token it sees </arg_value><arg, where the "
            "call must close (tool_close peeks </tool_call>: chat-auto-parser-generator.cpp build_func_parser), "
            "that partial parse fails and a failed one streams nothing (common_chat_peg_parse returns an empty "
            "message, server-task.cpp update_chat_msg skips it). Chorus stops at </assistant> too "
            "(detect.template_stops), but its stop filter holds back only the text that may begin a stop string "
            "(the <), not the whole token, so its parse sees Paris</arg_value> and closes the quote")
REFUSED_AT_0 = ("llama-server's parser refuses its continued reply from its first character, so it streams no call "
                "and its stream ends there (a failed partial parse that read nothing throws, chat.cpp "
                "common_chat_peg_parse); Chorus's partial parse of the same tokens has the call. Traced 2026-11-27 "
                "with llama-server on this variant: its parser reads only NAME[ARGS]([CALL_ID]ID)?[ARGS]{...}, "
                "`[ARGS]` twice as in its grammar (test_tool_grammar_server SERVER_BUGS), so the template's own "
                "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \" is 'unparsed peg-native output' "
                "from offset 0 (also with another id, or none); the prefix [TOOL_CALLS]get_weather[ARGS][ARGS]"
                "{\"city\": \" streams the call")
V4_CONTINUED = ("the prompts differ: common/parsers/deepseek.cpp continues a V4 assistant message that has no "
                "reasoning_content from `<｜Assistant｜></think>` (is_v4: thinking closed), where the generation "
                "prompt with thinking on ends `<｜Assistant｜><think>`; Chorus's reply prefix continues its whole "
                "generation prompt (traced 2026-11-27 00:45 UTC: llama-server's prompt ends `</think></think>\n\n"
                "<｜DSML｜tool_calls>`, Chorus's `<think></think>\n\n...`). V3.2's continuation keeps `<think>` and "
                "matches")
SAME_TEXT = {
    "deepseek-ai-DeepSeek-V3.1": "same text, refused by llama-server: after the arguments its call must end with "
                                 "<｜tool▁call▁end｜> (chat-auto-parser-generator.cpp build_func_parser: tool_close "
                                 "peeks it); the token }\" closes the object and adds a stray quote, so from that "
                                 "token on each partial parse fails and streams nothing (common_chat_peg_parse "
                                 "returns an empty message, server-task.cpp update_chat_msg skips it): its last "
                                 "streamed arguments are the previous token's, up to \"Paris\" without the brace. "
                                 "Chorus does not require the end marker, so its call has the brace (traced "
                                 "2026-11-26)",
}
PREFIX_TRIGGERED = ("different text after the same first call: llama-server's lazy grammar is already triggered by "
                    "the reply prefix's `<function` (minicpm5.cpp puts the continued message into its generation "
                    "prompt, which llama-server feeds through the grammar: grammar_triggered True), so only the "
                    "tool's parameter names may follow `<param name=\"`; Chorus applies no tool grammar after a "
                    "reply prefix (tool_grammar.py) and SmolLM2 writes the system prompt's example "
                    "`<param name=\"param-name\">` (traced 2026-11-27)")
REQUIRED_OWN = {
    "ibm-granite-granite-3.3-2B-Instruct": "llama-server applies no grammar to Granite 3.3 (its analysis finds no call "
                                           "format); Chorus constrains it (call first) and the model calls",
}
DIFFER: dict[tuple[str, str], str] = {
    **{(n, "required"): reason for n, reason in REQUIRED_OWN.items()},
    **{(n, "parse"): CONTINUED for n in ("Apriel-1.6-15b-Thinker-fixed", "Qwen-QwQ-32B", "llama-cpp-deepseek-r1")},
    ("poolside-Laguna-S-2.1", "parse"): LAGUNA_S,
    ("openbmb-MiniCPM5-1B", "parse"): PREFIX_TRIGGERED,
    **{(n, "parse"): reason for n, reason in SAME_TEXT.items()},
    ("Mistral-Small-3.2-24B-Instruct-2506", "parse"): REFUSED_AT_0,
    **{(n, "parse"): CONTINUED for n in (
        "deepseek-ai-DeepSeek-R1-Distill-Llama-8B", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B")},
    **{(n, "parse"): V4_CONTINUED for n in ("deepseek-ai-DeepSeek-V4", "deepseek-ai-DeepSeek-V4-Flash-0731")},
}


# Solar Open writes a call's id before its name, where llama.cpp's parser reads none: its template analysis keeps
# the id of its own probe call in the name prefix, so only a call with that id parses (docs/tools.md); with CALL's
# id both sides would refuse the call from its first character, and the case would show no parse.
CALL_IDS = {"upstage-Solar-Open-100B": "call00001"}


def call_prefix(template: ChatTemplate, trigger: str, call_id: str = CALL["id"]) -> str:
    """The text that opens a call to get_weather (with `call_id`): the template's own rendering of an assistant
    call, from the assistant turn's start (or, when that rendering does not continue the generation prompt, from
    the format's `trigger`) up to the city's value; just the trigger when the template does not render calls in
    history."""
    head = template.render(QUESTION, tools=[WEATHER])
    whole = template.render([*QUESTION, {"role": "assistant", "content": "", "tool_calls": [{**CALL, "id": call_id}]}],
                            tools=[WEATHER], add_generation_prompt=False)
    common = len(os.path.commonprefix([head, whole]))
    rest = whole[common:]
    if not whole.startswith(head):
        at = whole.find(trigger, max(common - len(trigger), 0)) if trigger else -1
        rest = whole[at:] if at >= 0 else ""
    return rest[:rest.index("Paris")] if "Paris" in rest else trigger


@pytest.fixture(scope="module")
def vocab(model_path):
    model = LlamaModel(model_path)
    yield model
    model.close()


_REPLIES: dict[str, dict] = {}


def replies(name: str, model_path, vocab, tmp_path_factory) -> dict:
    """Both modes' replies from both sides for one template, computed once (one server, one engine)."""
    if name in _REPLIES:
        return _REPLIES[name]
    source = TEMPLATES[name]
    variant = write_variant(model_path, tmp_path_factory.mktemp("parity") / "v.gguf", source)
    template = ChatTemplate(source, vocab.special_piece(vocab.bos_id), vocab.special_piece(vocab.eos_id),
                            add_bos=vocab.add_bos, add_eos=vocab.add_eos)
    eog = set(vocab.eog_ids)
    server = llama_server(variant, "--jinja", "-np", "1", "-c", "2048", "-t", str(TEST_THREADS), "--no-warmup",
                          "-lv", "10").launch()  # it loads while the engine does
    engine = None
    try:
        engine = Engine(EngineConfig(model_path=variant, n_slots=1, n_ctx_per_slot=2048, n_threads=TEST_THREADS,
                                     tool_format="template", **SERVER_LAYOUT))  # llama-server has no generic format
        server.wait_ready()
        out = {}
        prefix = call_prefix(template, detect(source).trigger, CALL_IDS.get(name, CALL["id"]))
        messages = [*QUESTION, {"role": "assistant", "content": prefix}] if prefix else QUESTION
        theirs_text, (ours_text, _) = apply_template(server, messages), chorus_prompt(engine, vocab, "")
        ours_prefix = theirs_text[len(ours_text):] if theirs_text.startswith(ours_text) else prefix
        out["parse"] = (server_reply(server, messages, "auto", MAX_TOKENS, eog),
                        chorus_reply(engine, chorus_prompt(engine, vocab, ours_prefix), "auto", MAX_TOKENS,
                                     ours_prefix), ours_prefix)
        if template_format(source):
            out["required"] = (server_reply(server, QUESTION, "required", MAX_TOKENS, eog),
                               chorus_reply(engine, chorus_prompt(engine, vocab, ""), "required", MAX_TOKENS, ""),
                               "")
        for theirs, ours, prefix in out.values():
            note_stopped(engine, theirs, ours, prefix, ours_text)
    finally:
        if engine is not None:
            engine.close()
        server.kill()
    _REPLIES[name] = out
    return out


def note_stopped(engine, theirs, ours, prefix: str, prompt_text: str) -> None:
    """Where llama-server's stream ended at its parser's error (its tokens a proper prefix of Chorus's), Chorus's
    last partial parse at the same length (`ours.notes["stopped"]`), made as its engine makes it."""
    n = len(theirs.tokens)
    if theirs.notes["error"] and n < len(ours.tokens) and ours.tokens[:n] == theirs.tokens:
        ours.notes["stopped"] = last_partial(engine, prompt_text, prefix, ours.tokens[:n])


# Cases whose outcome changed between runs on the same code: a defect to trace (a race, not a parity result).
UNSTEADY = {("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "required"):
            "matched llama-server in the 12:15 run and alone at 12:37, differed in the 12:31 run of the required "
            "cases (2026-11-26, busy host): which side varies is not traced yet"}


def cases(mode: str, names) -> list:
    """The template's cases, each in its template's xdist group: both modes' tests read one server's replies
    (`replies`), asked for once in a worker."""
    def param(name):
        group = pytest.mark.xdist_group(f"parity-{name}")
        if (name, mode) in UNSTEADY:
            return pytest.param(name, marks=[group, pytest.mark.xfail(strict=False, reason=UNSTEADY[name, mode])])
        if (name, mode) in DIFFER:
            return pytest.param(name, marks=[group, pytest.mark.xfail(strict=True, reason=DIFFER[name, mode])])
        return pytest.param(name, marks=group)
    return [param(name) for name in sorted(names)]


def text(vocab, ids: list[int]) -> str:
    return b"".join(vocab.piece(t) for t in ids).decode("utf-8", "replace")


def describe(vocab, theirs, ours) -> str:
    return (f"\n  llama-server {text(vocab, theirs.tokens)!r} ({theirs.finish}, "
            f"{theirs.calls}, {theirs.streamed}, {theirs.notes['error']}, {theirs.notes['grammar_triggered']})"
            f"\n  Chorus       {text(vocab, ours.tokens)!r} ({ours.finish}, {ours.calls}, {ours.streamed}, "
            f"last partial {ours.notes['partial']})")


def check(theirs, ours, vocab) -> None:
    assert ours.notes["prompt_text"] == theirs.notes["prompt_text"], "the prompts differ"
    if "stopped" in ours.notes:  # llama-server stopped at its parser's error: the same text so far, same calls
        assert ours.notes["stopped"] == theirs.streamed, describe(vocab, theirs, ours)
        return
    if text(vocab, ours.tokens) != text(vocab, theirs.tokens):
        at = len(os.path.commonprefix([ours.prompt, theirs.prompt]))
        tokens = "same prompt tokens" if ours.prompt == theirs.prompt else f"prompt tokens differ at {at}"
        pytest.fail(f"the generated texts differ ({tokens}):{describe(vocab, theirs, ours)}")
    if theirs.accepted and not cut_call(theirs):
        assert as_json(ours.calls) == as_json(theirs.calls), describe(vocab, theirs, ours)
    else:  # refused by llama-server's parser, or a call cut: compare the last partial parses
        assert ours.notes["partial"] == theirs.streamed, describe(vocab, theirs, ours)


def cut_call(reply) -> bool:
    """llama-server's parse is lenient at the end of the text: a call still open there (cut by max_tokens, or the
    model ended inside it) comes back as a final call with its arguments so far (not JSON), which is its last
    partial parse. (Qwen3-Coder's, on one llama.cpp thread: SmolLM2 writes `Paris</parameter>` with no newline
    before the closing tag, which the format's value ends at, so the value runs on to the end of the text.)"""
    def is_json(arguments: str) -> bool:
        try:
            json.loads(arguments)
        except ValueError:
            return False
        return True
    return not all(is_json(a) for _, a in reply.calls)


needs_templates = pytest.mark.skipif(not TEMPLATES, reason="llama.cpp's templates come with its source: run "
                                                           "`make llama-source`")


@needs_templates
@pytest.mark.parametrize("name", cases("parse", TEMPLATES))
def test_parsed_calls_match_llama_server(name, model_path, vocab, tmp_path_factory):
    theirs, ours, _ = replies(name, model_path, vocab, tmp_path_factory)["parse"]
    check(theirs, ours, vocab)


@needs_templates
@pytest.mark.parametrize("name", cases("required", [n for n, s in TEMPLATES.items() if template_format(s)]))
def test_required_calls_match_llama_server(name, model_path, vocab, tmp_path_factory):
    theirs, ours, _ = replies(name, model_path, vocab, tmp_path_factory)["required"]
    check(theirs, ours, vocab)
