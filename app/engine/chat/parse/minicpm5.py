"""MiniCPM5's calls (llama.cpp's common/parsers/minicpm5.cpp): after the text, up to the first `<function`,

    <function name="NAME"><param name="KEY">VALUE</param>...</function>

one or more (`space` between and after). A parameter is one of the tool's own, any number of times in any
order (llama.cpp's `zero_or_more(choice(args))`); a value whose schema may be a string is raw text up to
`</param>`, or, wrapped in `<![CDATA[`...`]]>` (then `</param>` right after), the text inside; any other value is
JSON of its schema, kept as written. The arguments are written as compact JSON as llama.cpp's mapper writes
them; while a string value streams it is shown open (no closing quote) without a tail that may begin its end
marker, so a partial translation is a prefix of the final one. A function that is not offered (llama.cpp's
parse fails there) is read with any parameters, as text, as Chorus reports such calls (minimax_m3.py).
"""

from __future__ import annotations

import json

from app.engine.chat.parse.minimax_m3 import may_be_string
from app.engine.chat.parse.scan import WS, loads, name_until, partial_tail, skip_ws
from app.engine.chat.parse.types import ToolCall, offered_parameters

OPEN, NAME_END, CLOSE = '<function name="', '">', "</function>"
PARAM, KEY_END, PARAM_END = '<param name="', '">', "</param>"
CDATA, CDATA_END = "<![CDATA[", "]]>"


class _More(Exception):
    """The text ended inside the call; `json` is the translation so far."""

    def __init__(self, json_text: str):
        super().__init__(json_text)
        self.json = json_text


def _open_string(body: str, end: str) -> str:
    """A string value still arriving, as JSON without its closing quote, a tail that may begin `end` held."""
    return json.dumps(body[:len(body) - partial_tail(body, (end,))], ensure_ascii=False)[:-1]


def _value(text: str, k: int, schema: dict, so_far: str) -> tuple[str, int] | None:
    """The value at text[k] and its `</param>`: (JSON, index after it); None where llama.cpp's parse fails."""
    if may_be_string(schema):
        if text.startswith(CDATA, k):
            at = text.find(CDATA_END, k + len(CDATA))
            if at < 0:
                raise _More(so_far + _open_string(text[k + len(CDATA):], CDATA_END))
            after = at + len(CDATA_END)
            if not text.startswith(PARAM_END, after):
                if PARAM_END.startswith(text[after:]):
                    raise _More(so_far + _open_string(text[k + len(CDATA):at], CDATA_END))
                return None
            return json.dumps(text[k + len(CDATA):at], ensure_ascii=False), after + len(PARAM_END)
        if len(text) - k < len(CDATA) and CDATA.startswith(text[k:]):
            raise _More(so_far + '"')  # CDATA or text: either way the string has begun
        at = text.find(PARAM_END, k)
        if at < 0:
            raise _More(so_far + _open_string(text[k:], PARAM_END))
        return json.dumps(text[k:at], ensure_ascii=False), at + len(PARAM_END)
    at = text.find(PARAM_END, k)
    if at < 0:
        body = text[k:]
        raise _More(so_far + body[:len(body) - partial_tail(body, (PARAM_END,))])
    raw = text[k:at]
    if loads(raw) is None:
        return None
    return raw, at + len(PARAM_END)


def _members(text: str, k: int, schema: dict | None) -> tuple[str, int]:
    """The parameters from text[k] up to `</function>`: (JSON members, index after `</function>`). `schema`
    None: a function not offered, any keys, each value text."""
    properties = (schema or {}).get("properties") or {}
    parts: list[str] = []
    while True:
        k = skip_ws(text, k)
        so_far = "{" + ",".join(parts)
        rest = text[k:]
        if text.startswith(CLOSE, k):
            return ",".join(parts), k + len(CLOSE)
        if not text.startswith(PARAM, k):
            if not rest or CLOSE.startswith(rest) or PARAM.startswith(rest):
                raise _More(so_far)
            raise ValueError(k)
        key_at = k + len(PARAM)
        key_end = text.find(KEY_END, key_at)
        if key_end < 0:
            key = text[key_at:len(text) - partial_tail(text[key_at:], (KEY_END,))]
            if schema is None and not any(c in key for c in WS + '<>"') or any(p.startswith(key) for p in properties):
                raise _More(so_far)
            raise ValueError(k)
        key = text[key_at:key_end]
        if schema is not None and key not in properties:
            raise ValueError(k)
        prop = properties.get(key) if schema is not None else {"type": "string"}
        key_json = ("," if parts else "") + json.dumps(key, ensure_ascii=False) + ":"
        value = _value(text, key_end + len(KEY_END), prop if isinstance(prop, dict) else {}, so_far + key_json)
        if value is None:
            raise ValueError(k)
        parts.append(key_json.lstrip(",") + value[0])
        k = value[1]


def call(text: str, j: int, fmt, tools) -> tuple[ToolCall | None, int, bool]:
    """`NAME">` parameters `</function>` at text[j] (after `<function name="`): (call, index after
    `</function>`, finished); (None, -1, False) where llama.cpp's parse fails. The call is reported once its
    name is complete."""
    name, at = name_until(text, j, NAME_END)
    if name is None:
        return None, at, False
    schema = offered_parameters(tools, name)
    try:
        members, end = _members(text, at + len(NAME_END), schema)
    except _More as more:
        return ToolCall("", name, more.json), len(text), False
    except ValueError:
        return None, -1, False
    return ToolCall("", name, "{" + members + "}"), end, True
