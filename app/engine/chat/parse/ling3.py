"""Ling 3.0 / Bailing V3 (llama.cpp's common/parsers/ling3.cpp): `<role>X</role>` turns ended by `<|role_end|>`,
calls written as GLM 4.5's (`<tool_call>NAME <arg_key>K</arg_key> <arg_value>V</arg_value> ... </tool_call>`).

The generation prompt ends with `<role>ASSISTANT</role>\\n<think>` when thinking is on (the model never writes the
opening tag) or pre-closes the block (`<think></think>`) when it is off. So, as the handler's PEG parser:

- with the block open, the reply's thinking runs up to `</think>` or up to a call's `<tool_call>` (a call may
  come before the block is closed); with `--reasoning-format none` that text is content, without its tags;
- with tools, the content up to the first `<tool_call>`, then the calls (each's parameters as GLM 4.5's, read by
  calls.tagged_call: required ones first in any order, a `string` one raw, others JSON), then content up to
  `<|role_end|>`, which is dropped; calls that do not parse leave their text in the content;
- without tools (or tool_choice none), the content up to `<|role_end|>`. With tools, text before any call keeps
  a `<|role_end|>` (the handler's content there runs up to a call's start only).

llama.cpp's parse fails on text after `<|role_end|>` (its `end`); llama-server never sees any, as `<|role_end|>`
is its stop string for this template. Here such text is dropped.
"""

from __future__ import annotations

from dataclasses import replace

from app.engine.chat.parse.calls import held
from app.engine.chat.parse.scan import find_marker, skip_ws
from app.engine.chat.parse.types import Format, ParsedMessage

THINK_END, CALL_START, ROLE_END = "</think>", "<tool_call>", "<|role_end|>"


def parse(text: str, fmt: Format, *, partial: bool, reasoning: bool, opened: bool, tools, calls: bool,
          read_calls) -> ParsedMessage:
    """The reply after the generation prompt. `opened`: the prompt left `<think>` open; `reasoning` False:
    `--reasoning-format none`; `calls` False: no call parser (no tools, or tool_choice none); `read_calls` is
    parse.read_calls (passed in: parse.py imports this module)."""
    thought, rest = _thinking(text, partial) if opened else ("", text)
    before = "" if reasoning else thought
    if not calls:
        return ParsedMessage(before + _tail(rest, partial), thought.strip() if reasoning else "")
    content, found = _answer(rest, replace(fmt, kind="tagged"), partial, tools, read_calls)
    return ParsedMessage(before + content, thought.strip() if reasoning else "", tuple(found))


def _thinking(text: str, partial: bool) -> tuple[str, str]:
    """(the thinking, the rest): up to `</think>` (dropped) or a call's start (kept in the rest)."""
    hits = [(at, complete, marker) for marker in (THINK_END, CALL_START)
            for at, complete in [find_marker(text, marker, 0, partial)] if at >= 0]
    if not hits:
        return text, ""
    at, complete, marker = min(hits)
    if not complete:
        return text[:at], ""
    return text[:at], text[at + len(THINK_END):] if marker == THINK_END else text[at:]


def _tail(text: str, partial: bool) -> str:
    """Content up to the turn's end (its tag dropped), a tail that may begin it held back while streaming."""
    at, _ = find_marker(text, ROLE_END, 0, partial)
    return text[:at] if at >= 0 else text


def _answer(text: str, fmt: Format, partial: bool, tools, read_calls):
    """(content, calls) of the answer when a call parser is built."""
    at, complete = find_marker(text, CALL_START, 0, partial)
    if at < 0:
        return (held(text, (CALL_START,)) if partial else text), []
    if not complete:
        return text[:at], []
    found, end, ok = read_calls(text, at, fmt, partial, tools)
    if not ok or not found:
        if partial:
            return text[:at], []
        return text[:at] + _tail(text[at:], False), []  # the handler's tail reads the rest as content
    return text[:at] + _tail(text[skip_ws(text, end):], partial), found
