"""Reading a reply in llama.cpp's generic tool format (app/engine/chat/template/generic.py says when it is used).

Reference: `common_chat_parse_generic` in llama.cpp's common/chat.cpp, before its autoparser replaced it (as
vendored by ollama/ollama at llama/llama.cpp/common/chat.cpp), with common/chat-parser.cpp's
`consume_json_with_dumped_args`, `add_tool_call` and `add_tool_calls`, and `common_chat_parse`'s fallback:

- The reply is one JSON value. Its `tool_calls` (an array of {"name", "arguments", "id"}) are read first, then
  its `tool_call` (one such object), then its `response` (content: the string, or any other value dumped with an
  indent of 2). A call's `arguments` are re-serialised compactly (nlohmann's `dump()`: no spaces, `{"a":1}`),
  whatever spacing the model wrote; a call without a name fails the parse.
- A parse that fails (not JSON, none of those keys, a call without a name) makes the whole text the content, as
  `common_chat_parse` falls back to content-only; while the reply streams, such text shows nothing yet.
- While it streams, a call shows once its name is complete, with its arguments dumped so far (a prefix of the
  final dump: a string cut where the text ends, a key still being written included), and `response` grows as it
  is written.
"""

from __future__ import annotations

import json

from app.engine.chat.parse.scan import loads, object_fields, skip_ws, string_end, value_end
from app.engine.chat.parse.types import Format, ParsedMessage, ToolCall

GENERIC = Format("generic", "generic", think=None)


def dump_arguments(value) -> str:
    """nlohmann's `json::dump()` with no indent: compact separators, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def parse(text: str, partial: bool = False, calls: bool = True) -> ParsedMessage:
    """The reply as common_chat_parse_generic reads it (the module docstring says how)."""
    if not calls:
        return ParsedMessage(text)
    failed = ParsedMessage() if partial else ParsedMessage(text)
    start = skip_ws(text, 0)
    end = value_end(text, start) if start < len(text) else None
    if end is not None and text[start] in "{[\"":
        read = _read(_json(text[start:end]))
        return failed if read is None else read
    if not partial or text[start:start + 1] != "{":
        return failed
    fields, _, ok = object_fields(text, start)
    if not ok:
        return failed
    if "tool_calls" in fields:
        return ParsedMessage("", "", tuple(_open_calls(text, fields["tool_calls"][0])))
    if "tool_call" in fields:
        call = _open_call(text, fields["tool_call"][0])
        return ParsedMessage("", "", (call,) if call is not None else ())
    if "response" in fields and text[fields["response"][0]:][:1] == '"':
        return ParsedMessage(_string_so_far(text[fields["response"][0]:]))  # streams as it grows
    return failed


_BAD = object()


def _json(raw: str):
    def refuse(constant):
        raise ValueError(constant)
    try:
        return json.loads(raw, parse_constant=refuse)  # nlohmann takes no NaN / Infinity
    except ValueError:
        return _BAD


def _read(value) -> ParsedMessage | None:
    """A complete reply's message, None where llama.cpp's parse fails."""
    if not isinstance(value, dict):
        return None
    if "tool_calls" in value:
        items = value["tool_calls"]
        found = [_call(item) for item in (items if isinstance(items, list) else [])]
        return ParsedMessage("", "", tuple(found)) if isinstance(items, list) and None not in found else None
    if "tool_call" in value:
        call = _call(value["tool_call"])
        return ParsedMessage("", "", (call,)) if call is not None else None
    if "response" in value:
        response = value["response"]
        return ParsedMessage(response if isinstance(response, str)
                             else json.dumps(response, indent=2, ensure_ascii=False))
    return None


def _call(item) -> ToolCall | None:
    """common_chat_msg_parser::add_tool_call(json): name, id and the dumped arguments; no name, no call."""
    if not isinstance(item, dict):
        return None
    name, call_id = item.get("name", ""), item.get("id", "")
    if not isinstance(name, str) or not isinstance(call_id, str) or not name:
        return None
    return ToolCall(call_id, name, dump_arguments(item["arguments"]) if "arguments" in item else "")


def _open_calls(text: str, i: int) -> list[ToolCall]:
    """The calls of a `tool_calls` array the reply is still writing, up to the first without a complete name."""
    out: list[ToolCall] = []
    if text[i:i + 1] != "[":
        return out
    j = skip_ws(text, i + 1)
    while j < len(text) and text[j] == "{":
        after = value_end(text, j)
        call = _call(_json(text[j:after])) if after is not None else _open_call(text, j)
        if call is None:
            break
        out.append(call)
        if after is None:
            break
        j = skip_ws(text, after)
        if text[j:j + 1] != ",":
            break
        j = skip_ws(text, j + 1)
    return out


def _open_call(text: str, i: int) -> ToolCall | None:
    """A call object the reply is still writing: shown once its name is complete (a partial string is dropped by
    llama.cpp's healing), its arguments dumped so far, its id once complete."""
    after = value_end(text, i)
    if after is not None:
        return _call(_json(text[i:after]))
    fields, _, ok = object_fields(text, i)
    if not ok or fields.get("name", (0, None))[1] is None:
        return None
    name = loads(text[slice(*fields["name"])])
    call_id = ""
    if "id" in fields and fields["id"][1] is not None:
        call_id = loads(text[slice(*fields["id"])])
    if not isinstance(name, str) or not name or not isinstance(call_id, str):
        return None
    args = ""
    if "arguments" in fields:
        a, b = fields["arguments"]
        args = dump_arguments(_json(text[a:b])) if b is not None else dump_prefix(text[a:])
    return ToolCall(call_id, name, args)


def dump_prefix(raw: str) -> str:
    """The compact dump of JSON text cut short, cut where the text ends (consume_json_with_dumped_args: the
    healed value dumped, cut at the healing marker): whitespace between tokens dropped, complete strings and
    numbers re-serialised, a string still open written so far."""
    out, i = [], skip_ws(raw, 0)
    while i < len(raw):
        ch = raw[i]
        if ch == '"':
            end = string_end(raw, i)
            if end is None:
                out.append(json.dumps(_string_so_far(raw[i:]), ensure_ascii=False)[:-1])
                break
            out.append(json.dumps(loads(raw[i:end]), ensure_ascii=False))
            i = end
        elif ch in "{}[],:":
            out.append(ch)
            i += 1
        else:
            end = value_end(raw, i)
            token = raw[i:end]
            value = _json(token) if end is not None else _BAD
            out.append(token if value is _BAD else json.dumps(value))
            if end is None:
                break
            i = end
        i = skip_ws(raw, i)
    return "".join(out)


def _string_so_far(raw: str) -> str:
    """The text of a JSON string the reply is still writing (`raw` opens with its quote), an escape sequence cut
    at the end left out."""
    body = raw[1:]
    for cut in range(len(body), max(len(body) - 6, 0) - 1, -1):
        value = loads('"' + body[:cut] + '"')
        if isinstance(value, str):
            return value
    return ""
