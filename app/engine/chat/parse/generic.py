"""Reading a reply in llama.cpp's generic tool format (app/engine/chat/template/generic.py says when it is used):
common/chat.cpp's `common_chat_parse_generic`."""

from __future__ import annotations

import json

from app.engine.chat.parse.calls import json_call
from app.engine.chat.parse.scan import loads, object_fields, skip_ws, value_end
from app.engine.chat.parse.types import Format, ParsedMessage, ToolCall

GENERIC = Format("generic", "generic", think=None)
CALL = Format("generic-call", "json", think=None, id_key="id")  # one call object: {"name", "arguments", "id"}


def parse(text: str, partial: bool = False, calls: bool = True) -> ParsedMessage:
    """The reply as common_chat_parse_generic reads it: the calls of `tool_call` / `tool_calls`, the text of
    `response`; text that is no such object is content. While it streams, a call shows once named."""
    if not calls:
        return ParsedMessage(text)
    start = skip_ws(text, 0)
    if start >= len(text):
        return ParsedMessage()
    if text[start] != "{":
        return ParsedMessage(text)
    fields, end, ok = object_fields(text, start)
    if not ok:
        return ParsedMessage(text)
    if "tool_call" in fields:
        found, _, _ = json_call(text, fields["tool_call"][0], CALL, (), partial)
        return ParsedMessage("", "", (found,) if found is not None else ())
    if "tool_calls" in fields:
        return ParsedMessage("", "", tuple(_calls(text, fields["tool_calls"][0], partial)))
    if "response" in fields and fields["response"][1] is None and text[fields["response"][0]:][:1] == '"':
        return ParsedMessage(_string_so_far(text[fields["response"][0]:]))  # streams as it grows
    if "response" in fields and fields["response"][1] is not None:
        response = loads(text[slice(*fields["response"])])
        dumped = json.dumps(response, indent=2, ensure_ascii=False)
        return ParsedMessage(response if isinstance(response, str) else dumped)
    return ParsedMessage("" if partial and end is None else text)


def _calls(text: str, i: int, partial: bool) -> list[ToolCall]:
    out: list[ToolCall] = []
    if text[i:i + 1] != "[":
        return out
    j = skip_ws(text, i + 1)
    while j < len(text) and text[j] == "{":
        found, _, _ = json_call(text, j, CALL, (), partial)
        if found is not None:
            out.append(found)
        after = value_end(text, j)
        if after is None:
            break
        j = skip_ws(text, after)
        if text[j:j + 1] != ",":
            break
        j = skip_ws(text, j + 1)
    return out


def _string_so_far(raw: str) -> str:
    """The text of a JSON string the reply is still writing (`raw` opens with its quote), an escape sequence cut
    at the end left out."""
    body = raw[1:]
    for cut in range(len(body), max(len(body) - 6, 0) - 1, -1):
        value = loads('"' + body[:cut] + '"')
        if isinstance(value, str):
            return value
    return ""
