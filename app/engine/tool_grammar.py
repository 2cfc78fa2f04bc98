"""Constrained tool calls, as llama-server constrains them: a GBNF grammar of the calls, built from the tools'
JSON schemas, that even a small model cannot leave once a call has started.

- `tool_choice` "auto": a **lazy** grammar (llama.cpp's `llama_sampler_init_grammar_lazy_patterns`): free text
  until the format's trigger (`<tool_call>` for Hermes/Qwen) appears in the output, then the grammar from the
  trigger on, so the call is well formed; once it is complete only the end of the reply may follow. This is what
  llama-server does with tools and a template whose calls start with a marker (common/chat-auto-parser-generator).
- "required", or one function named: the grammar from the first token (not lazy), so the reply **is** a call
  (of that function). llama-server's required grammar also allows text before the first call; a small model
  rambles there, so Chorus starts with the call (docs/engine.md, "Tool calls").
- "none", no tools, a grammar or JSON schema of the request's own, a reply prefix (the grammar would not see it),
  or a template whose call format is not in `FORMATS`: no tool grammar.

Each call's JSON is `{"name": <one of the tools>, "arguments": <that tool's parameters>}`, converted to GBNF by
llama-cpp-python's json_schema_to_gbnf (its objects closed as llama.cpp's converter closes them).
`FORMATS` is keyed by the chat output parser's format names (app/engine/chat_parse: `detect(template).name`).
"""

from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass

import llama_cpp
from llama_cpp.llama_grammar import json_schema_to_gbnf

from app.engine.chat_parse import detect
from app.engine.constraint import GrammarConstraint
from app.engine.grammar import GrammarError, closed_objects, grammar_sampler
from app.engine.native import capture_log


@dataclass(frozen=True)
class ToolFormat:
    """How one output format writes a call: the text that starts it (the lazy grammar's trigger word) and the
    GBNF of one call around its JSON (rule `tool-call-json`), and what separates parallel calls."""

    trigger: str
    call: str
    separator: str = '"\\n"?'


FORMATS = {
    "hermes": ToolFormat("<tool_call>", '"<tool_call>" "\\n"? tool-call-json "\\n"? "</tool_call>"'),  # Qwen2.5
}


def template_format(template: str | None) -> str | None:
    """The FORMATS key of a chat template's calls (chat_parse.detect's format name, as llama.cpp chooses it), or
    None when its calls are in a format without a grammar here."""
    name = detect(template).name
    return name if name in FORMATS else None


def call_schema(tools: tuple[dict, ...]) -> dict:
    """The JSON schema of one call's object: the name of one of `tools` and its arguments."""
    variants = [{"type": "object",
                 "properties": {"name": {"const": t["function"]["name"]},
                                "arguments": t["function"].get("parameters") or {"type": "object"}},
                 "required": ["name", "arguments"]} for t in tools]
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def tool_gbnf(fmt: ToolFormat, tools: tuple[dict, ...], parallel: bool) -> str:
    """The whole grammar: one call (or, with `parallel`, one or more) in `fmt`'s syntax."""
    try:
        json_rules = json_schema_to_gbnf(json.dumps(closed_objects(call_schema(tools))))
    except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise GrammarError(f"the tools' parameters cannot become a grammar: {exc}") from exc
    json_rules = re.sub(r"(?m)^root ::=", "tool-call-json ::=", json_rules)
    more = f" ({fmt.separator} tool-call)*" if parallel else ""
    return f"root ::= tool-call{more}\ntool-call ::= {fmt.call}\n{json_rules}"


def lazy_sampler(model, gbnf: str, trigger: str):
    """llama.cpp's lazy grammar sampler: unconstrained until `trigger` appears in the output (a regular
    expression of the word, as common/sampling.cpp makes of a word trigger), then `gbnf` from there."""
    pattern = ctypes.c_char_p(re.escape(trigger).encode())
    patterns = (ctypes.c_char_p * 1)(pattern)
    with capture_log() as lines:
        sampler = llama_cpp.llama_sampler_init_grammar_lazy_patterns(model.vocab, gbnf.encode(), b"root", patterns,
                                                                      1, None, 0)
    if not sampler:
        raise GrammarError(f"invalid tool grammar: {' '.join(lines) or 'llama.cpp refused it'}")
    return sampler


def tool_constraint(model, request, template: str | None) -> GrammarConstraint | None:
    """The request's tool-call constraint (the module docstring says when there is one); the caller owns it."""
    if (not request.tools or request.tool_choice == "none" or request.grammar is not None
            or request.json_schema is not None or request.reply_prefix):
        return None
    name = template_format(template)
    if name is None:
        return None
    fmt = FORMATS[name]
    tools = request.tools
    if request.tool_choice not in ("auto", "required"):
        tools = tuple(t for t in tools if t["function"]["name"] == request.tool_choice)
    gbnf = tool_gbnf(fmt, tools, bool(request.parallel_tool_calls))
    if request.tool_choice == "auto":
        return GrammarConstraint(lazy_sampler(model, gbnf, fmt.trigger), model.eog_ids)
    return GrammarConstraint(grammar_sampler(model, gbnf), model.eog_ids)
