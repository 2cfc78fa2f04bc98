"""Gemma 4's calls (llama.cpp's common/parsers/gemma4.cpp and its gemma4 mapper in chat-peg-parser.cpp):
`<|tool_call>call:NAME{key:value,...}<tool_call|>`, where keys are bare, strings are quoted by `<|"|>` and
other values are JSON (numbers, true/false/null, nested {...} and [...] in the same syntax). The arguments are
translated to compact JSON (no blank after `:` or `,`, as llama.cpp's mapper writes them) as they arrive, so a
partial translation is a prefix of the final one."""

from __future__ import annotations

from app.engine.chat_parse.scan import loads, partial_tail
from app.engine.chat_parse.types import ToolCall

QUOTE = '<|"|>'


def to_json(text: str, i: int) -> tuple[str, int | None]:
    """The Gemma 4 value opening at text[i] ('{') as JSON text, and the index just past it (None: the text ends
    first; the JSON is then the translation so far, held back before a possible `<|"|>`)."""
    out, depth, k, key_start = [], 0, i, None
    while k < len(text):
        if text.startswith(QUOTE, k):
            end = text.find(QUOTE, k + len(QUOTE))
            body = text[k + len(QUOTE):len(text) if end < 0 else end]
            if end < 0:
                body = body[:len(body) - partial_tail(body, (QUOTE,))]
                out.append('"' + _escape(body))
                return "".join(out), None
            out.append('"' + _escape(body) + '"')
            k = end + len(QUOTE)
            continue
        c = text[k]
        if c in "{[":
            depth += 1
            out.append(c)
            key_start = k + 1 if c == "{" else None
        elif c in "}]":
            depth -= 1
            out.append(c)
            if depth == 0:
                return "".join(out), k + 1
        elif c == ",":
            out.append(",")
            key_start = k + 1 if _in_dict(out) else None
        elif key_start is not None and c == ":":
            out.append('"' + _escape(text[key_start:k].strip()) + '":')
            key_start = None
        elif key_start is None:
            if text.startswith(QUOTE[:len(text) - k], k) and len(text) - k < len(QUOTE):
                return "".join(out), None
            out.append(c)
        k += 1
    return "".join(out), None


def _in_dict(out: list[str]) -> bool:
    depth_kind = []
    for piece in out:
        if piece in ("{", "["):
            depth_kind.append(piece)
        elif piece in ("}", "]"):
            depth_kind.pop()
    return bool(depth_kind) and depth_kind[-1] == "{"


def _escape(s: str) -> str:
    import json
    return json.dumps(s, ensure_ascii=False)[1:-1]


def call(text: str, j: int, fmt, tools) -> tuple[ToolCall | None, int, bool]:
    """NAME{...} at text[j] (after `<|tool_call>call:`)."""
    brace = text.find("{", j)
    if brace < 0:
        return None, len(text), False
    name = text[j:brace].strip()
    if not name or any(c in name for c in " \n<>"):
        return None, -1, False
    args, end = to_json(text, brace)
    if end is None:
        return ToolCall("", name, args), len(text), False
    if loads(args) is None:
        return None, -1, False
    return ToolCall("", name, args), end, True
