"""Kimi K3's replies (llama.cpp's common/parsers/kimi-k3.cpp): XTML sections built from `<|open|>TAG attrs<|sep|>`
and `<|close|>TAG<|sep|>`. A reply continues the generation prompt, which opens the assistant message and its
think section (`<|open|>think<|sep|>`, the template's default), and reads

    THINKING [<|close|>think<|sep|>] [<|open|>response<|sep|>] CONTENT [<|close|>response<|sep|>]
    [<|open|>tools<|sep|> CALL+ <|close|>tools<|sep|>] [<|close|>message<|sep|>] [<|end_of_msg|>]

    CALL = <|open|>call tool="NAME" index="N"<|sep|> ARG* <|close|>call<|sep|>
    ARG  = <|open|>argument key="KEY" type="T"<|sep|> VALUE <|close|>argument<|sep|>

The thinking runs to its closer or to the response opener; the content to the response closer, the tools
opener or the message closer. An argument's value is a string or JSON as its tool's schema types it (`type` a
string, else "string"), not as its `type` attribute says; the arguments are written as llama.cpp's mapper writes
them: `"KEY":` once the key is complete, a string value open while it streams. A marker cut off by the end of
the text is held back (llama.cpp's lenient `until`), in whole parses too. A key the offered tool does not take
fails the calls, as llama.cpp's parse; a function not offered is read with any keys, typed by their attribute
(Chorus reports such calls). Text left after the message, which llama.cpp's parser refuses, is appended to the
content (the calls kept); a call cut by the end of the text is streamed, then dropped by the whole parse (its text
stays content), as in Chorus's other formats.
"""

from __future__ import annotations

import json
import re

from app.engine.chat.parse.pythonic import normalize
from app.engine.chat.parse.scan import loads, partial_tail
from app.engine.chat.parse.types import ParsedMessage, ToolCall, offered_properties

SEP = "<|sep|>"
THINK_START, THINK_END = "<|open|>think<|sep|>", "<|close|>think<|sep|>"
RESP_START, RESP_END = "<|open|>response<|sep|>", "<|close|>response<|sep|>"
TOOLS_START, TOOLS_END = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
CALL_START, CALL_END = '<|open|>call tool="', "<|close|>call<|sep|>"
ARG_START, ARG_END = '<|open|>argument key="', "<|close|>argument<|sep|>"
MSG_END, EOM = "<|close|>message<|sep|>", "<|end_of_msg|>"
MORE, FAIL, DONE = "more", "fail", "done"
_TYPE = re.compile(r'\btype="([^"]*)"')


def _until(text: str, i: int, delimiters: tuple[str, ...]) -> int:
    """Where llama.cpp's until_one_of stops: the first delimiter, or a tail that may begin one, or the end."""
    hits = [at for at in (text.find(d, i) for d in delimiters) if at >= 0]
    return min([*hits, len(text) - partial_tail(text[i:], delimiters)])


def _optional(text: str, i: int, literal: str) -> int | None:
    """Index after `literal` at text[i], i when it is not there, None when the text ends inside it (or at i)."""
    if text.startswith(literal, i):
        return i + len(literal)
    return None if literal.startswith(text[i:]) else i


def parse(text: str, *, partial: bool = False, reasoning: bool = True, tools=(), calls: bool = True) -> ParsedMessage:
    """The reply `text`, from inside the think section the generation prompt opened. `reasoning` False: the
    thinking is content (--reasoning-format none); `calls` False: the request offered no tools."""
    i = _until(text, 0, (THINK_END, RESP_START))
    thought, content, found = text[:i], "", []

    def message() -> ParsedMessage:
        think = thought if reasoning and thought.strip() else ""
        return ParsedMessage(content if reasoning else thought + content, think, tuple(found))

    for literal in (THINK_END, RESP_START):
        i = _optional(text, i, literal)
        if i is None:
            return message()
    end = _until(text, i, (RESP_END, TOOLS_START, MSG_END))
    content, i = text[i:end], _optional(text, end, RESP_END)
    if i is None:
        return message()
    if text[i:] and TOOLS_START.startswith(text[i:]):  # the tools opener cut by the end: held back
        return message()
    if calls and text.startswith(TOOLS_START, i):
        found, k, state = _tools(text, i + len(TOOLS_START), tools)
        if state != DONE and not partial:  # not calls (llama.cpp's parser refuses them), or a call cut by the
            content, found = content + text[i:], []  # end of the text: the text stays content
        if state != DONE or k is None:  # (while streaming, the calls read so far)
            return message()
        i = k
    for literal in (MSG_END, EOM):
        i = _optional(text, i, literal)
        if i is None:
            return message()
    if not partial:
        content += text[i:]
    return message()


def _tools(text: str, j: int, tools) -> tuple[list[ToolCall], int | None, str]:
    """The calls after `<|open|>tools<|sep|>` up to and including its closer (and the message's end markers):
    (calls, index after them or None when the text ends there, DONE / MORE: the text ended before the calls were
    complete / FAIL)."""
    found: list[ToolCall] = []
    while text.startswith(CALL_START, j):
        call, j, state = _call(text, j + len(CALL_START), tools)
        if call is not None:
            found.append(call)
        if state != DONE:
            return found, None, state
    if not found:
        return found, None, MORE if CALL_START.startswith(text[j:]) else FAIL
    for literal in (TOOLS_END, MSG_END, EOM):  # text in their place: after the calls, appended to the content
        k = _optional(text, j, literal)
        if k is None:
            return found, None, DONE
        j = k
    return found, j, DONE


def _kind(props: dict | None, key: str, attrs: str) -> str:
    """How the value is read: the schema's `type` when it is a string (else "string"), as kimi-k3.cpp; for a
    function not offered, the `type` attribute."""
    if props is None:
        found = _TYPE.search(attrs)
        return found.group(1) if found else "string"
    spec = props.get(key)
    return spec["type"] if isinstance(spec, dict) and isinstance(spec.get("type"), str) else "string"


def _string(raw: str) -> str:
    return json.dumps(raw, ensure_ascii=False)[1:-1]


def _call(text: str, j: int, tools) -> tuple[ToolCall | None, int, str]:
    """NAME" attrs<|sep|> ARG* <|close|>call<|sep|> at text[j]: (call, index after it, DONE / MORE / FAIL). The
    call appears once its opener is complete (llama.cpp's tool_open is atomic)."""
    opener = _until(text, j, (SEP,))
    if opener == len(text) or not text.startswith(SEP, opener):
        return None, len(text), MORE
    quote = text.find('"', j, opener)
    name = text[j:quote] if quote >= 0 else ""
    if not name:
        return None, j, FAIL
    props, parts, k = offered_properties(tools, name), [], opener + len(SEP)

    def so_far(*more: str) -> ToolCall:
        return ToolCall("", name, "{" + ",".join([*parts, *more]))

    while text.startswith(ARG_START, k):
        a = k + len(ARG_START)
        quote = text.find('"', a)
        if quote < 0:
            return so_far(), len(text), MORE
        key = text[a:quote]
        if props is not None and key not in props:
            return None, k, FAIL
        head = json.dumps(key, ensure_ascii=False) + ":"
        sep = _until(text, quote + 1, (SEP,))
        if not text.startswith(SEP, sep):
            return so_far(head), len(text), MORE
        kind, v0 = _kind(props, key, text[quote + 1:sep]), sep + len(SEP)
        v1 = _until(text, v0, (ARG_END,))
        raw = text[v0:v1]
        if not text.startswith(ARG_END, v1):
            return so_far(head + ('"' + _string(raw) if kind == "string" else normalize(raw))), len(text), MORE
        value = normalize(raw)
        if kind == "string" or (loads(value) is None and value.strip() != "null"):
            value = '"' + _string(raw) + '"'
        parts.append(head + value)
        k = v1 + len(ARG_END)
    if text.startswith(CALL_END, k):
        return ToolCall("", name, "{" + ",".join(parts) + "}"), k + len(CALL_END), DONE
    if ARG_START.startswith(text[k:]) or CALL_END.startswith(text[k:]):
        return so_far(), len(text), MORE
    return None, k, FAIL
