"""Constrained tool calls, as llama-server constrains them: a GBNF grammar of the calls, built from the tools'
JSON schemas, that even a small model cannot leave once a call has started.

- `tool_choice` "auto": a **lazy** grammar (llama.cpp's `llama_sampler_init_grammar_lazy_patterns`): free text
  until the format's trigger word (`<tool_call>` for Hermes/Qwen, `[TOOL_CALLS]` for Mistral...) appears in the
  output, then the grammar from the trigger on, so the call is well formed; once it is complete only the end of
  the reply may follow. This is what llama-server does with tools and a template whose calls start with a marker
  (common/chat-auto-parser-generator.cpp). A format without a trigger (Llama 3.x's bare JSON, Functionary v3.2,
  whose calls follow the prompt's `>>>`) gets none with "auto", as in llama-server. The lazy grammar and its
  triggers are llama-server's (`auto_gbnf`).
- "required", or one function named: the grammar from the first token (not lazy), as llama-server's: any text
  that does not contain the trigger may come before the first call (a thinking block first when the template
  thinks; where the template always wraps its content, Command R7B's <|START_RESPONSE|>, only one such block),
  and the reply cannot end before a call is complete; the calls are in llama-server's shape (its markers and
  `space`s). A small model may ramble in that text until max_tokens, as it does under llama-server.
  `GenerationRequest.tool_call_first` starts the reply with the call instead (Chorus's own shape; after the rest
  of a `<think>` block the generation prompt left open), so that even a small model calls.
- `parallel_tool_calls` None (left out): llama-server's default, several calls when the template renders a
  second one (`default_parallel`).
- "none", no tools, a grammar or JSON schema of the request's own, a reply prefix (the grammar would not see it),
  or a template whose call format is not in `formats.BUILDERS`: no tool grammar.

The grammar of each format is built in app/engine/chat/grammar/formats.py, keyed by the chat output parser's
format names (app/engine/chat/parse: `detect(template).name`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from app.engine.chat import handler
from app.engine.chat.grammar import generic as generic_format
from app.engine.chat.grammar.build import Builder
from app.engine.chat.grammar.formats import BUILDERS, tool_gbnf
from app.engine.chat.grammar.handlers import ROOTS, regex_escape, trigger_patterns
from app.engine.chat.grammar.kimi_k3 import kimi_k3_call
from app.engine.chat.grammar.ling_muse import ling3_lazy_call, muse_lazy_call
from app.engine.chat.grammar.minicpm5 import minicpm5_call
from app.engine.chat.grammar.server import SERVER_SHAPES, kimi_root, ministral_root, qwen3_coder_root
from app.engine.chat.parse import detect
from app.engine.chat.template.render import ChatTemplate


def template_format(template: str | None) -> str | None:
    """The BUILDERS key of a chat template's calls (parse.detect's format name, as llama.cpp chooses it), or
    None when its calls are in a format without a grammar here."""
    name = detect(template).name
    return name if name in BUILDERS else None


# Where llama-server's text before the calls stops (its `until` of the trigger) when that is not the format's
# trigger word: Llama 3.x's calls are bare JSON (the text stops at "{"), Kimi K2's at either marker.
LEAD_STOPS = {"llama-3.x": ("{",), "kimi-k2": ("<|tool_calls_section_begin|>", "<|tool_call_begin|>")}


_CALL = {"id": "a1b2c3d4e", "type": "function", "function": {"name": "f", "arguments": '{"x": "y"}'}}
_TOOL = {"type": "function", "function": {"name": "f", "description": "f",
                                          "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}


@functools.lru_cache(maxsize=16)
def _chat(template: str) -> ChatTemplate:
    """The template compiled once for `lead_text` and `opens_block` (a template that fails raises each time)."""
    return ChatTemplate(template, "", "")


@functools.lru_cache(maxsize=16)
def lead_text(name: str, template: str) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """(stops, thinking markers) of llama-server's required grammar for a template: the text before the calls
    contains none of the stops (the trigger, with the newline the template writes after it in a rendered call,
    as llama.cpp's template analysis keeps it), and a thinking block may come first when the template thinks
    (template/thinking.py's port of the analysis). Formats whose required grammar in llama-server has no such text
    (or no grammar at all): ()."""
    if name in NO_LEAD:
        return (), None
    if name in ROOTS:  # a handler of its own (handlers.py); LFM2's thinks when its source has <think>
        return (BUILDERS[name][0],), ("<think>", "</think>") if name == "lfm2" and "<think>" in template else None
    trigger = BUILDERS[name][0]
    stops = LEAD_STOPS.get(name)
    try:
        chat = _chat(template)
        thinks = chat.supports_thinking
        if stops is None:
            user = [{"role": "user", "content": "x"}]
            whole = chat.render([*user, {"role": "assistant", "content": "", "tool_calls": [_CALL]}], tools=[_TOOL],
                                add_generation_prompt=False)
            at = whole.find(trigger, len(chat.render(user, tools=[_TOOL], add_generation_prompt=False)))
            stops = (trigger + "\n" if at >= 0 and whole[at + len(trigger):].startswith("\n") else trigger,)
    except Exception:  # a template that cannot render a call: the trigger as the format spells it
        thinks, stops = False, stops or (trigger,)
    think = THINK.get(name, detect(template).think) if thinks else None
    if name == "qwen3-coder":  # common/parsers/qwen3-coder.cpp: thinking when the source has <think>
        think = ("<think>", "</think>") if "<think>" in template else None
    return stops, think


@functools.lru_cache(maxsize=16)
def opens_block(template: str, think: tuple[str, str]) -> bool:
    """Whether the template's generation prompt leaves a thinking block with these markers open (Apriel 1.6's
    `<|begin_assistant|>`, Seed-OSS's `<seed:think>`...), as llama-server then starts its grammar inside it."""
    try:
        prompt = _chat(template).render([{"role": "user", "content": "x"}], tools=[_TOOL])[-64:]
    except Exception:
        return False
    return prompt.rfind(think[0]) > prompt.rfind(think[1])


def default_parallel(template: str) -> bool:
    """What llama-server allows when a request leaves `parallel_tool_calls` out (server-common.cpp: the
    template's `supports_parallel_tool_calls`, template/caps.py's port of its probe); False for a template that
    fails."""
    try:
        return _chat(template).caps.parallel_tool_calls
    except Exception:
        return False


def variant(name: str, template: str) -> str:
    """The llama.cpp parser of a template whose Chorus format covers several: Ministral 3 / Devstral
    (common/chat.cpp: `[SYSTEM_PROMPT]`, `[TOOL_CALLS]`, `[ARGS]`, no `[CALL_ID]`) has its own."""
    if name == "magistral" and handler.of(template) == "ministral-3":
        return "ministral-3"
    return ""


# Thinking markers of llama-server's analysis where they differ from the parser's (Apriel 1.6's block starts at
# its assistant marker).
THINK = {"apriel-thinker": ("<|begin_assistant|>", "[BEGIN FINAL RESPONSE]")}

# Formats whose llama-server required grammar is not `reasoning? text? calls`: Functionary v3.2 (its own
# `>>>` recipients), and Granite 3.3 / DeepSeek R1 (no grammar at all there).
NO_LEAD = {"functionary-v3.2", "granite", "deepseek-r1"}


def required_gbnf(name: str, template: str, tools: tuple[dict, ...], parallel: bool, thinking: bool) -> str:
    """llama-server's required grammar for this template (text, then calls; the call first where llama-server's
    has no text before it). `thinking`: the prompt left `<think>` open (the engine knows); for other thinking
    markers the template's generation prompt says."""
    lead, think = lead_text(name, template)
    if think and think[0] != "<think>":
        thinking = opens_block(template, think)
    return tool_gbnf(name, tools, parallel, thinking=thinking, lead=lead, think=think,
                     variant=variant(name, template) if lead else "", wrap=wrapped(template) if lead else None)


def wrapped(template: str) -> tuple[str, str] | None:
    """The markers the template always wraps its content in (Command R7B's <|START_RESPONSE|>), or None."""
    wrap = detect(template).wrap
    return wrap if wrap[0] and wrap[1] else None


def auto_gbnf(name: str, template: str, tools: tuple[dict, ...], parallel: bool) -> tuple[str, tuple[str, ...]]:
    """llama-server's lazy ("auto") grammar and its trigger patterns: for a format its template analysis handles
    (SERVER_SHAPES), its trigger rule (the calls in its shape) and the trigger as the template writes it (Hermes'
    `<tool_call>\n`, common/chat-auto-parser-generator.cpp); for Kimi K2 and K3, the Qwen3-Coder family and Ministral 3,
    the trigger rule of their own parser's grammar (Qwen3-Coder's, without `<think>`, also triggers at each
    `<function=NAME>`: common/parsers/qwen3-coder.cpp); the others, Chorus's call grammar from their trigger."""
    word = BUILDERS[name][0]
    if name in SERVER_SHAPES:
        stops, _ = lead_text(name, template)
        word = stops[0] if len(stops) == 1 else word
        b = Builder(tools)
        return b.text(SERVER_SHAPES[name](b, parallel, word)), (regex_escape(word),)
    patterns = trigger_patterns(name, word)
    if name == "qwen3-coder" and "<think>" not in template:
        patterns += tuple(regex_escape(f"<function={t['function']['name']}>") for t in tools)
    own = {"kimi-k2": lambda b: kimi_root(b, parallel, False) and "tool-call",
           "qwen3-coder": lambda b: qwen3_coder_root(b, parallel, False, "<think>" in template) and "tool-call-root",
           "ministral-3": lambda b: ministral_root(b, parallel) and "tool-call",
           "muse-glimmer": lambda b: muse_lazy_call(b, parallel),
           "ling3": lambda b: ling3_lazy_call(b, parallel),
           "minicpm5": lambda b: minicpm5_call(b, parallel, server=True),
           "kimi-k3": lambda b: kimi_k3_call(b, parallel)}.get(variant(name, template) or name)
    if own:  # a parser of its own in llama.cpp: the trigger rule of its grammar
        b = Builder(tools)
        return b.text(own(b)), patterns
    return tool_gbnf(name, tools, parallel), patterns


class ToolGrammar(NamedTuple):
    """A request's tool-call grammar: its GBNF, and the lazy grammar's trigger patterns (None: from the first
    token). The engine makes it a llama.cpp sampler (app/engine/sampling/grammar.py `tool_constraint`)."""

    gbnf: str
    triggers: tuple[str, ...] | None


def tool_grammar(request, template: str | None, thinking: bool = False, generic: bool = False) -> ToolGrammar | None:
    """The request's tool-call grammar (the module docstring says when there is one). `request` is read for its
    tools, tool_choice, parallel_tool_calls, tool_call_first, grammar, json_schema and reply_prefix. `thinking`:
    the generation prompt left a `<think>` block open, so a required call follows its `</think>`. `generic`: the
    tools are offered in llama.cpp's generic JSON format (app/engine/chat/template/generic.py), whose grammar holds the
    whole reply from its first token. Raises ToolSchemaError when a tool's parameters cannot become a grammar."""
    if (not request.tools or request.tool_choice == "none" or request.grammar is not None
            or request.json_schema is not None or request.reply_prefix):
        return None
    if generic:
        chosen = request.tools if request.tool_choice in ("auto", "required") else tuple(
            t for t in request.tools if t["function"]["name"] == request.tool_choice)
        parallel = bool(request.parallel_tool_calls) and template is not None and default_parallel(template)
        return ToolGrammar(generic_format.gbnf(chosen, parallel, required=request.tool_choice != "auto"), None)
    name = template_format(template)
    if name is None:
        return None
    trigger = BUILDERS[name][0]
    if request.tool_choice == "auto" and trigger is None:
        return None
    tools = request.tools
    if request.tool_choice not in ("auto", "required"):
        tools = tuple(t for t in tools if t["function"]["name"] == request.tool_choice)
    parallel = request.parallel_tool_calls
    if parallel is None:  # llama-server's default: several calls when the template renders a second one
        parallel = default_parallel(template)
    if request.tool_choice == "auto":
        return ToolGrammar(*auto_gbnf(name, template, tools, parallel))
    if request.tool_call_first:
        return ToolGrammar(tool_gbnf(name, tools, parallel, thinking=thinking), None)
    return ToolGrammar(required_gbnf(name, template, tools, parallel, thinking), None)
