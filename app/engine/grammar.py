"""Constrained output: a request's GBNF grammar or JSON schema as llama.cpp's grammar sampler.

A JSON schema becomes GBNF through llama-cpp-python's converter (`json_schema_to_gbnf`; the schema `{}` means any
JSON value); the grammar is parsed by llama.cpp itself, whose parser only logs its message before returning
NULL, so the message is taken from what it printed (`native.capture_errors`). Either failure is a `GrammarError` that
names the problem: the engine ends that request "error", and the window checks a pane's format before running it.
"""

from __future__ import annotations

import json

import llama_cpp
from llama_cpp.llama_grammar import json_schema_to_gbnf

from app.engine.native import capture_errors
from app.engine.prompt import PromptError


class GrammarError(PromptError):
    """The request's grammar or JSON schema cannot be used; the message says why."""


def request_gbnf(grammar: str | None, json_schema: dict | None) -> str | None:
    """The GBNF a request is constrained by (None: free text)."""
    if grammar is not None:
        if not grammar.strip():
            raise GrammarError("the grammar is empty")
        return grammar
    if json_schema is None:
        return None
    try:
        return json_schema_to_gbnf(json.dumps(json_schema))
    except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise GrammarError(f"invalid JSON schema: {exc}") from exc


def grammar_sampler(vocab, gbnf: str):
    """A new llama.cpp grammar sampler (root rule "root"); the caller owns it (or hands it to a chain)."""
    with capture_errors() as lines:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
    if not sampler:
        said = dict.fromkeys(line.strip() for text in lines for line in text.splitlines() if line.strip())
        detail = " ".join(said) or "llama.cpp rejected it"  # one line (in order, once each) for a status bar
        raise GrammarError(f"invalid grammar: {detail}")
    return sampler


def check(vocab, grammar: str | None = None, json_schema: dict | None = None) -> str | None:
    """None when the grammar or schema compiles against this vocabulary, else the message (for a form)."""
    try:
        gbnf = request_gbnf(grammar, json_schema)
        if gbnf is not None:
            llama_cpp.llama_sampler_free(grammar_sampler(vocab, gbnf))
    except GrammarError as exc:
        return str(exc)
    return None
