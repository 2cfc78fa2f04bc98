"""MiniMax-M3's calls (llama.cpp's common/parsers/minimax-m3.cpp and its minimax_m3 mapper in
chat-peg-parser.cpp): every tag carries the namespace token `]<]minimax[>[`, and a call is

    NS<tool_call>\\n NS<invoke name="NAME"> NS<key>VALUE NS</key> ... NS</invoke>\\n NS</tool_call>

where a parameter's tag is its name and its value is written by its JSON schema: a string (or a union with a
string alternative) as raw text up to its closing tag, an object with properties as nested elements, an array
as NS<item>...NS</item> elements, anything else as JSON. Required parameters come first in schema order, then
optional ones in any order (a key out of that order ends the parse, as llama.cpp's). The arguments are written
as compact JSON as llama.cpp's mapper writes them; a value still arriving is left open (a string without its
closing quote, an object or array without its closing bracket), so a partial translation is a prefix of the
final one.
"""

from __future__ import annotations

import json

from app.engine.chat.parse.scan import loads, name_until, partial_tail, skip_ws, value_end
from app.engine.chat.parse.types import ToolCall, offered_parameters

NS = "]<]minimax[>["
OPEN_NAME, CLOSE_NAME, INVOKE_END = NS + '<invoke name="', '">', NS + "</invoke>"


class _Fail(Exception):
    """The text is not this format's call (llama.cpp's parse fails there)."""


class _More(Exception):
    """The text ended inside the call; `json` is the translation so far."""

    def __init__(self, json_text: str):
        super().__init__(json_text)
        self.json = json_text


def may_be_string(schema: dict) -> bool:
    """common_chat_schema::may_be_string: a string, a string const/enum, or a union with such an alternative."""
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    if isinstance(schema.get("const"), str) or any(isinstance(v, str) for v in schema.get("enum") or ()):
        return True
    return any(may_be_string(s) for s in (schema.get("anyOf") or schema.get("oneOf") or ()) if isinstance(s, dict))


def _key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False) + ":"


def _literal(text: str, k: int, literal: str, so_far: str) -> int:
    """Index after `literal` at text[k]; _More(so_far) when the text ends inside it, _Fail when it is not
    there."""
    if text.startswith(literal, k):
        return k + len(literal)
    if literal.startswith(text[k:]):
        raise _More(so_far)
    raise _Fail


def _value(text: str, k: int, schema: dict, close: str, out: str) -> tuple[str, int]:
    """The value at text[k] up to and including `close`: (JSON, index after close). `out` is the JSON written
    before it (what _More carries)."""
    if may_be_string(schema):
        at = text.find(close, k)
        if at < 0:
            body = text[k:]
            raise _More(out + '"' + json.dumps(body[:len(body) - partial_tail(body, (close,))],
                                               ensure_ascii=False)[1:-1])
        return '"' + json.dumps(text[k:at], ensure_ascii=False)[1:-1] + '"', at + len(close)
    union = schema.get("anyOf") or schema.get("oneOf")
    if union:
        for alternative in union:  # PEG's ordered choice: the first that does not fail
            try:
                return _value(text, k, alternative if isinstance(alternative, dict) else {}, close, out)
            except _Fail:
                continue
        raise _Fail
    if schema.get("type") == "object" and schema.get("properties"):
        members, k = _members(text, k, schema, out + "{")
        k = skip_ws(text, k)
        return "{" + members + "}", _literal(text, k, close, out + "{" + members)
    if schema.get("type") == "array":
        items, item_schema, k = [], schema.get("items") if isinstance(schema.get("items"), dict) else {}, k
        while True:
            start = skip_ws(text, k)
            so_far = out + "[" + ",".join(items)
            if start >= len(text):
                raise _More(so_far)
            if not text.startswith(NS + "<item>", start):
                if (NS + "<item>").startswith(text[start:]) or close.startswith(text[start:]):
                    raise _More(so_far)
                return "[" + ",".join(items) + "]", _literal(text, start, close, so_far)
            value, k = _value(text, start + len(NS + "<item>"), item_schema, NS + "</item>",
                              so_far + ("," if items else ""))
            items.append(value)
    end = value_end(text, k)
    if end is None:
        raise _More(out + text[k:])
    if loads(text[k:end]) is None:
        raise _Fail
    return text[k:end], _literal(text, end, close, out + text[k:end])


def _members(text: str, k: int, schema: dict | None, out: str) -> tuple[str, int]:
    """The object's elements from text[k]: required ones in schema order, then optional ones in any order.
    `schema` None (a function not offered): any keys, each value text."""
    properties = (schema or {}).get("properties") or {}
    required = [p for p in properties if p in ((schema or {}).get("required") or ())]
    optional = [p for p in properties if p not in required]
    parts: list[str] = []
    while True:
        start = skip_ws(text, k)
        allowed = required[len(parts):len(parts) + 1] or optional
        so_far = out + ",".join(parts)
        if start >= len(text) or (text[start:] and (NS + "<").startswith(text[start:])):
            raise _More(so_far)
        if not text.startswith(NS + "<", start) or text.startswith(NS + "</", start):
            if len(parts) < len(required):
                raise _Fail if not (NS + "</").startswith(text[start:]) else _More(so_far)
            return ",".join(parts), k
        tag_start = start + len(NS) + 1
        tag_end = text.find(">", tag_start)
        if tag_end < 0:
            if schema is None or any(p.startswith(text[tag_start:]) for p in allowed):
                raise _More(so_far)
            raise _Fail
        key = text[tag_start:tag_end]
        if schema is None:
            properties[key] = {"type": "string"}
        elif key not in allowed:
            if len(parts) < len(required):
                raise _Fail
            return ",".join(parts), k
        value, k = _value(text, tag_end + 1, properties[key] if isinstance(properties[key], dict) else {},
                          f"{NS}</{key}>", so_far + ("," if parts else "") + _key(key))
        parts.append(_key(key) + value)


def call(text: str, j: int, fmt, tools) -> tuple[ToolCall | None, int, bool]:
    """`NAME">` members `NS</invoke>` at text[j] (after `NS<invoke name="`): (call, index after
    `NS</invoke>`, finished). The call is reported once its name is complete. A function that is not offered
(llama.cpp's parse fails there) is read with any parameters, as text, as Chorus reports such calls."""
    name, at = name_until(text, j, CLOSE_NAME)
    if name is None:
        return None, at, False
    schema = offered_parameters(tools, name)
    try:
        members, k = (_members(text, at + len(CLOSE_NAME), schema, "{") if schema is None or schema.get("properties")
                      else ("", at + len(CLOSE_NAME)))
        k = skip_ws(text, k)
        if k >= len(text):
            raise _More("{" + members)
        end = _literal(text, k, INVOKE_END, "{" + members)
    except _More as more:
        return ToolCall("", name, more.json or "{"), len(text), False
    except _Fail:
        return None, -1, False
    return ToolCall("", name, "{" + members + "}"), end, True
