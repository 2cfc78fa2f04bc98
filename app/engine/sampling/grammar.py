"""Constrained output: a request's GBNF grammar or JSON schema as a `Constraint` (constraint.py).

- A **GBNF grammar** is llama.cpp's own: parsed and matched by its grammar sampler, so the language is exactly
  what llama.cpp means by it. Its parser prints the reason it refuses a grammar with fprintf(stderr) and then logs
  only "failed to parse grammar". The reason shown is llguidance's GBNF parser's (in Python, instant, with the
  position), or where that parser finds nothing wrong, what llama.cpp's printed in a short-lived process of its own
  (`chat/grammar/probe.py`); never by redirecting this process's stderr, which other threads write to. Everything else
  llama.cpp says about a grammar (no root rule, left recursion) comes through its log callback on this thread.
- A **JSON schema** is compiled by llguidance (its JSON schema compiler covers `$ref`, `anyOf`, `pattern`,
  `additionalProperties`... that llama-cpp-python's GBNF converter rejects or mishandles) and matched by an
  llguidance matcher over this model's vocabulary (built once per model, `native.LlamaModel.guidance_tokenizer`).
  `{}` means any JSON value. Whitespace is what the old converter allowed: at most one space between items.
  An object schema that lists `properties` and says nothing of `additionalProperties` is closed, as llama.cpp's
  converter (and so llama-server's `json_schema`) closes it: without that, a small model pads the object with
  invented keys until it runs out of tokens (`closed_objects`).

Either failure is a `GrammarError` that names the problem: the engine ends that request "error", and the window
checks a pane's format before running it (`check`).
"""

from __future__ import annotations

import ctypes
import functools
import subprocess
import sys

import llama_cpp
from llguidance import LLMatcher
from llguidance.gbnf_to_lark import gbnf_to_lark

from app.engine.chat.grammar import probe as gbnf_probe
from app.engine.chat.grammar.build import ToolSchemaError
from app.engine.chat.grammar.schema import closed_objects
from app.engine.chat.grammar.tool_choice import tool_grammar
from app.engine.native import capture_log
from app.engine.prompt import PromptError
from app.engine.sampling.constraint import GrammarConstraint, SchemaConstraint

# What the old GBNF converter allowed between JSON items (`space ::= " "?`): models pad with newlines otherwise.
JSON_OPTIONS = {"whitespace_pattern": " ?"}


class GrammarError(PromptError):
    """The request's grammar or JSON schema cannot be used; the message says why."""


def schema_grammar(json_schema: dict) -> str:
    """The llguidance grammar of a JSON schema; raises GrammarError with llguidance's reason if it refuses it."""
    try:
        grammar = LLMatcher.grammar_from_json_schema(closed_objects(json_schema), defaults=JSON_OPTIONS)
    except (ValueError, TypeError) as exc:
        raise GrammarError(f"invalid JSON schema: {exc}") from exc
    problem = LLMatcher.validate_grammar(grammar)
    if problem:
        raise GrammarError(f"unsupported JSON schema: {_one_line(problem)}")
    return grammar


def check_request(grammar: str | None, json_schema: dict | None) -> None:
    """The checks that need no model: an empty grammar, a schema llguidance refuses (raises GrammarError)."""
    if grammar is not None and not grammar.strip():
        raise GrammarError("the grammar is empty")
    if grammar is None and json_schema is not None:
        schema_grammar(json_schema)


def make_constraint(model, grammar: str | None, json_schema: dict | None):
    """The request's Constraint (None: free text). The caller owns it (`free()`)."""
    check_request(grammar, json_schema)
    if grammar is not None:
        return GrammarConstraint(grammar_sampler(model, grammar), model.eog_ids)
    if json_schema is None:
        return None
    matcher = LLMatcher(model.guidance_tokenizer(), schema_grammar(json_schema), log_level=0)
    if matcher.is_error():
        raise GrammarError(f"unsupported JSON schema: {_one_line(matcher.get_error())}")
    return SchemaConstraint(matcher, model.eog_ids, model.n_vocab)


def tool_constraint(model, request, template: str | None, thinking: bool = False,
                    generic: bool = False) -> GrammarConstraint | None:
    """The request's tool-call constraint (app/engine/chat/grammar/tool_choice.py says when there is one and
    builds its grammar); the caller owns it. `thinking`: the generation prompt left a `<think>` block open, so a
    required call follows its `</think>`; `generic`: the tools are offered in llama.cpp's generic JSON format."""
    try:
        found = tool_grammar(request, template, thinking, generic)
    except ToolSchemaError as exc:
        raise GrammarError(str(exc)) from exc
    if found is None:
        return None
    if found.triggers is None:
        return GrammarConstraint(grammar_sampler(model, found.gbnf), model.eog_ids)
    return GrammarConstraint(lazy_sampler(model, found.gbnf, found.triggers), model.eog_ids)


def lazy_sampler(model, gbnf: str, triggers: tuple[str, ...]):
    """llama.cpp's lazy grammar sampler: unconstrained until one of the `triggers` (regular expressions, a word
    escaped as common/sampling.cpp escapes it) matches the output, then `gbnf` from the match (or its first
    group) on."""
    patterns = (ctypes.c_char_p * len(triggers))(*(t.encode() for t in triggers))
    with capture_log() as lines:
        sampler = llama_cpp.llama_sampler_init_grammar_lazy_patterns(model.vocab, gbnf.encode(), b"root", patterns,
                                                                      len(triggers), None, 0)
    if not sampler:
        raise GrammarError(f"invalid tool grammar: {' '.join(lines) or 'llama.cpp refused it'}")
    return sampler


def grammar_sampler(model, gbnf: str):
    """A new llama.cpp grammar sampler (root rule "root"); the caller owns it."""
    with capture_log() as lines:
        sampler = llama_cpp.llama_sampler_init_grammar(model.vocab, gbnf.encode("utf-8"), b"root")
    if not sampler:
        said = [line.strip() for text in lines for line in text.splitlines() if line.strip()]
        if not said or any("failed to parse grammar" in line for line in said):  # its parser printed why
            reason = syntax_error(gbnf) or parser_message(str(model.path), gbnf)
            said = [reason] + [s for s in said if "failed to parse" not in s]
        raise GrammarError(f"invalid grammar: {' '.join(dict.fromkeys(s for s in said if s))}")
    return sampler


def syntax_error(gbnf: str) -> str | None:
    """Where a GBNF text breaks the grammar syntax, from llguidance's GBNF parser (instant, in this process),
    or None if it finds nothing wrong."""
    try:
        gbnf_to_lark(gbnf)
    except Exception as exc:  # GbnfToLarkError (syntax, with the position) or Exception (undefined rule, no root)
        return str(exc)
    return None


@functools.lru_cache(maxsize=64)
def parser_message(model_path: str, gbnf: str) -> str:
    """What llama.cpp's GBNF parser prints when it refuses `gbnf`, from a process of its own (chat/grammar/probe.py):
    for the rare grammar llguidance's parser accepts and llama.cpp's does not (about a second)."""
    if getattr(sys, "frozen", False):  # an installed app has no script to run
        return "llama.cpp's parser refused it"
    try:
        probe = subprocess.run([sys.executable, gbnf_probe.__file__, model_path],
                               input=gbnf, capture_output=True, timeout=60, encoding="utf-8", errors="replace")
    except (OSError, subprocess.SubprocessError) as exc:
        return f"llama.cpp's parser refused it (its reason could not be read: {exc})"
    return _one_line(probe.stdout) or "llama.cpp's parser refused it"


def check(model, grammar: str | None = None, json_schema: dict | None = None) -> str | None:
    """None when the grammar or schema compiles for this model, else the message (for a form)."""
    try:
        check_request(grammar, json_schema)
        if grammar is not None:
            llama_cpp.llama_sampler_free(grammar_sampler(model, grammar))
    except GrammarError as exc:
        return str(exc)
    return None


def _one_line(text: str) -> str:
    """Distinct non-empty lines, in order, joined by spaces (for a status bar)."""
    return " ".join(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))
