"""A pythonic call list still streaming ("[name(key='val', ..." of LFM2's format), read as llama.cpp's partial
parse reads it (common/chat-peg-parser.cpp: python_style_tool_calls and common_chat_peg_mapper::map).

Its mapper writes a call's arguments as they arrive: `{` once `name(` is complete, `"key":` once `key=` is, then
the value's text so far, Python quotes turned into JSON's (normalize_quotes_to_json), and `}` once `)` closes the
call. A key the tool does not take, or text where the grammar has none, fails llama.cpp's parse: llama-server then
streams nothing more, so the call stays as it was before that point.
"""

from __future__ import annotations

import json

from app.engine.chat.parse.scan import WS
from app.engine.chat.parse.types import ToolCall

_LITERALS = (("True", "true"), ("False", "false"), ("None", "null"))


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def normalize(value: str) -> str:
    """Python-style quotes and literals as JSON (llama.cpp's normalize_quotes_to_json): a single-quoted string
    becomes double-quoted (escapes kept, its `\\'` unescaped, a bare `"` escaped); True/False/None become
    true/false/null, a prefix of one the prefix of the other."""
    out, single, double, i = [], False, False, 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if single and nxt == "'":
                out.append("'")
            elif single and nxt == '"':
                out.append('\\"')
            else:
                out.append(c + nxt)
            i += 2
            continue
        if c == '"':
            if single:
                out.append('\\"')
            else:
                double = not double
                out.append(c)
        elif c == "'":
            if double:
                out.append(c)
            else:
                single = not single
                out.append('"')
        elif not single and not double and c in "TFN" and (i == 0 or not _word(value[i - 1])):
            n = 0
            while i + n < len(value) and _word(value[i + n]):
                n += 1
            token = value[i:i + n]
            hit = next((js[:n] for py, js in _LITERALS if py[:n] == token), None)
            if hit is not None:
                out.append(hit)
                i += n
                continue
            out.append(c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _string_end(text: str, i: int) -> int | None:
    """Index past the Python string literal quoted at text[i], or None if the text ends inside it."""
    quote, j = text[i], i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
        elif text[j] == quote:
            return j + 1
        else:
            j += 1
    return None


def unquoted(text: str, j: int):
    """(index, character) of text[j:] outside Python string literals (quotes and escapes skipped)."""
    quote, k = "", j
    while k < len(text):
        c = text[k]
        if quote:
            if c == "\\":
                k += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        else:
            yield k, c
        k += 1


def _value_end(text: str, i: int) -> int | None:
    """Index past the Python value at text[i] (a string, or anything up to a top-level `,` or `)`), or None if
    the text ends first."""
    if text[i] in "'\"":
        return _string_end(text, i)
    depth = 0
    for j, c in unquoted(text, i):
        if c in "[{(":
            depth += 1
        elif c in "]})":
            if depth == 0:
                return j
            depth -= 1
        elif c == "," and depth == 0:
            return j
    return None


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in WS:
        i += 1
    return i


def call_args(text: str, i: int, keys) -> tuple[str, int | None]:
    """(arguments as llama.cpp's mapper has written them so far, index past the closing `)` or None) for the call
    whose arguments start at text[i]; `keys` the tool's parameters (None: any)."""
    args, count = "{", 0
    i = _skip(text, i)
    while i < len(text):
        if text[i] == ")":
            return args + "}", i + 1
        if count:
            if text[i] != ",":
                return args, None
            i = _skip(text, i + 1)
        eq = i
        while eq < len(text) and _word(text[eq]):
            eq += 1
        if eq >= len(text):
            return args, None
        key = text[i:eq]
        if text[eq] != "=" or not key or (keys is not None and key not in keys):
            return args, None
        args += ("," if count else "") + json.dumps(key, ensure_ascii=False) + ":"
        count += 1
        i = eq + 1
        if i >= len(text):
            return args, None
        end = _value_end(text, i)
        args += normalize(text[i:len(text) if end is None else end])
        if end is None:
            return args, None
        i = end
        if i < len(text) and text[i] in WS:
            i = _skip(text, i)
            if i < len(text) and text[i] != ")":
                return args, None
    return args, None


def open_calls(text: str, j: int, tools=()) -> list[ToolCall]:
    """The calls of the unfinished list at text[j] ("[a(x=1), b(y=" -> a {"x":1}, b {"y":), as llama.cpp's partial
    parse has them; a call to a tool not offered, or one not written as the grammar has it, ends the list."""
    props = {}
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        props[function.get("name")] = set((function.get("parameters") or {}).get("properties") or {})
    calls: list[ToolCall] = []
    if not text.startswith("[", j):
        return calls
    i = _skip(text, j + 1)
    while i < len(text):
        if calls:
            if text[i] != ",":
                return calls
            i = _skip(text, i + 1)
        paren = text.find("(", i)
        if paren < 0:
            return calls
        name = text[i:paren]
        if not name or not all(_word(c) or c == "." for c in name) or (props and name not in props):
            return calls
        args, end = call_args(text, paren + 1, props.get(name) if props else None)
        calls.append(ToolCall("", name, args))
        if end is None:
            return calls
        i = _skip(text, end)
    return calls
