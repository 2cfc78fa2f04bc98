"""Gemma 4's calls (llama.cpp's common/parsers/gemma4.cpp and its gemma4 mapper in chat-peg-parser.cpp):
`<|tool_call>call:NAME{key:value,...}<tool_call|>`, where keys are bare, strings are quoted by `<|"|>` and
other values are JSON (numbers, true/false/null, nested {...} and [...] in the same syntax). The arguments are
translated to compact JSON (no blank after `:` or `,`, as llama.cpp's mapper writes them) as they arrive, so a
partial translation is a prefix of the final one."""

from __future__ import annotations

from app.engine.chat.parse.scan import find_marker, loads, partial_tail, skip_ws
from app.engine.chat.parse.types import ToolCall

QUOTE = '<|"|>'
TURN = "<|turn>model\n"
CHANNEL, CHANNEL_END, CALL = "<|channel>", "<channel|>", "<|tool_call>"


def messages(text: str, think: tuple[str, str], partial: bool, reasoning: bool, calls: bool) -> tuple[str, str, int]:
    """gemma4.cpp's `start + message*`: an optional `<|turn>model\n`, then messages, each an optional thought
    block (after any stray `<|channel>` tokens not opening one) and content up to the next `<|channel>`,
    `<channel|>` or (with calls) `<|tool_call>`. A stray `<channel|>`, or a `<|channel>` that opens no thought,
    ends them: what follows is not part of the message. Returns (reasoning, content, index where they end);
    `reasoning` False: thought blocks are content, tags and all. A partial marker at the end is held back."""
    opening, closing = think
    k = len(TURN) if text.startswith(TURN) else 0
    if partial and k == 0 and text and TURN.startswith(text):
        return "", "", 0
    thoughts, content = [], []
    stops = (CHANNEL, CHANNEL_END, CALL) if calls else (CHANNEL, CHANNEL_END)
    while k < len(text):
        begin = k
        if text.startswith(CHANNEL, k):
            j = k
            while text.startswith(CHANNEL, j) and not text.startswith(opening, j):
                j += len(CHANNEL)
            if not text.startswith(opening, j):
                break  # no thought block (or, while partial, maybe one still arriving)
            body = skip_ws(text, j + len(opening))
            at, complete = find_marker(text, closing, body, partial)
            if not complete and not partial:
                break
            end = at if at >= 0 else len(text)
            if reasoning:
                thoughts.append(text[body:end])
            else:
                content.append(text[j:end + len(closing) if complete else end])
            if not complete:
                return "".join(thoughts), "".join(content), len(text)
            k = end + len(closing)
        hits = [hit for hit in (find_marker(text, stop, k, partial) for stop in stops) if hit[0] >= 0]
        stop = min(hits)[0] if hits else len(text)
        content.append(text[k:stop])
        if stop == begin:
            break
        k = stop
    thought = "".join(thoughts)
    return (thought if thought.strip() else ""), "".join(content), k


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
