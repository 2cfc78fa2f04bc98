"""Muse Glimmer (llama.cpp's common/parsers/muse-glimmer.cpp): an assistant turn is messages
`<|start|>assistant to=RECIPIENT<|message|>BODY` ended by `<|eom|>` (more follow) or `<|eot|>`. The generation
prompt is `<|start|>assistant`, so a reply starts at ` to=`:

- ` to=self<|message|>...<|eom|>`: thinking (content with `--reasoning-format none`), any number, first;
- then a call, ` to=ANY<|message|><atem:function_calls> <atem:invoke name="NAME"> PARAMS </atem:invoke>
  </atem:function_calls>`, each parameter `<atem:parameter name="K">V</atem:parameter>` (V raw text when its
  schema may be a string, else JSON), more calls each after `<|eom|><|start|>assistant`;
- or the answer, `[ to=user]<|message|>TEXT` up to `<|eot|>` or `<|eom|>`, optionally followed by
  `<|eom|><|start|>assistant` and calls. Call markup inside the answer or the thinking is text.

Without tools (or tool_choice none) only thinking and the answer are read; with `--reasoning-format none` too,
the whole reply is content. As llama.cpp's parser has no end-of-input check, what follows the last message read
(an `<|eot|>`, a message it does not take) is ignored. A reply that does not read at all stays content.
"""

from __future__ import annotations

import json

from app.engine.chat.parse.calls import held
from app.engine.chat.parse.minimax_m3 import may_be_string
from app.engine.chat.parse.scan import find_marker, loads, skip_ws
from app.engine.chat.parse.types import ParsedMessage, ToolCall, offered_properties

START, MESSAGE, EOM, EOT = "<|start|>assistant", "<|message|>", "<|eom|>", "<|eot|>"
SELF, USER = " to=self<|message|>", " to=user"
CALLS_OPEN, INVOKE, PARAM = "<atem:function_calls>", '<atem:invoke name="', '<atem:parameter name="'
PARAM_END, INVOKE_END, CALLS_END = "</atem:parameter>", "</atem:invoke>", "</atem:function_calls>"


class _More(Exception):
    """The text ended before the parse could decide (a marker or a call still arriving)."""


def parse(text: str, *, partial: bool, reasoning: bool, tools, calls: bool) -> ParsedMessage:
    if not reasoning and not calls:
        return ParsedMessage(held(text, (EOT, EOM, MESSAGE, START)) if partial else text)
    thoughts: list[str] = []
    i = 0
    while text.startswith(SELF, i) or (partial and SELF.startswith(text[i:])):
        if not text.startswith(SELF, i):
            return _message(thoughts, "", (), reasoning)
        body = i + len(SELF)
        at, complete = find_marker(text, EOM, body, partial)
        if at < 0 or not complete:
            thoughts.append(text[body:at if at >= 0 else len(text)])
            return _message(thoughts, "", (), reasoning)
        thoughts.append(text[body:at])
        i = at + len(EOM)
        if not text.startswith(START, i):
            if partial and START.startswith(text[i:]):
                return _message(thoughts, "", (), reasoning)
            return _failed(text, partial, thoughts, reasoning)
        i += len(START)
    try:
        found = _calls(text, i, tools, partial) if calls else []
        if found:
            return _message(thoughts, "", found, reasoning)
        answer, i = _answer(text, i, partial)
    except _More as more:
        return _message(thoughts, *more.args, reasoning) if partial else ParsedMessage(text)
    except ValueError:
        return _failed(text, partial, thoughts, reasoning)
    found = []
    if calls and text.startswith(EOM + START, i):
        try:
            found = _calls(text, i + len(EOM + START), tools, partial)
        except _More as more:
            found = more.args[1] if partial else []
    return _message(thoughts, answer, found, reasoning)


def _message(thoughts, answer: str, found, reasoning: bool) -> ParsedMessage:
    if reasoning:
        return ParsedMessage(answer, "".join(thoughts).strip(), tuple(found))
    return ParsedMessage("".join(thoughts) + answer, "", tuple(found))


def _failed(text: str, partial: bool, thoughts, reasoning: bool) -> ParsedMessage:
    """llama.cpp's parse fails here (llama-server answers 500): streaming, what was read; else the whole text."""
    return _message(thoughts, "", (), reasoning) if partial else ParsedMessage(text)


def _answer(text: str, i: int, partial: bool) -> tuple[str, int]:
    """The answer message's text and the index of its end marker (ValueError: not an answer)."""
    j = i + len(USER) if text.startswith(USER, i) else i
    _literal(text, j, MESSAGE, ("", ()))
    j += len(MESSAGE)
    ends = [hit for hit in (find_marker(text, m, j, partial) for m in (EOT, EOM)) if hit[0] >= 0]
    at = min(ends)[0] if ends else len(text)
    return text[j:at], at


def _literal(text: str, k: int, literal: str, so_far) -> int:
    if text.startswith(literal, k):
        return k + len(literal)
    if literal.startswith(text[k:]):
        raise _More(*so_far)
    raise ValueError(literal)


def _calls(text: str, i: int, tools, partial: bool) -> list[ToolCall]:
    """The calls from a message header at text[i], each after `<|eom|><|start|>assistant` but the first ([]
    when the first message is not a call); _More(content, calls so far) when the text ends inside one."""
    found: list[ToolCall] = []
    while True:
        try:
            call, i = _call(text, i, tools, found)
        except ValueError:
            return found
        except _More:
            if found and not partial:
                return found  # the calls read; llama.cpp ignores a message it cannot finish
            raise
        found.append(call)
        if not text.startswith(EOM + START, i):
            if partial and i < len(text) and (EOM + START).startswith(text[i:]):
                raise _More("", found)
            return found
        i += len(EOM + START)


def _call(text: str, i: int, tools, before) -> tuple[ToolCall, int]:
    so_far = ("", before)
    k = _literal(text, i, " to=", so_far)
    at = text.find(MESSAGE, k)
    if at < 0:
        _literal(text, len(text), MESSAGE, so_far)
    k = _literal(text, at + len(MESSAGE), CALLS_OPEN, so_far)
    k = _literal(text, skip_ws(text, k), INVOKE, so_far)
    close = text.find('">', k)
    if close < 0:
        raise _More(*so_far) if "\n" not in text[k:] else ValueError("name")
    name = text[k:close]
    props = offered_properties(tools, name)  # None: a function not offered (llama.cpp fails; Chorus reads it)
    parts: list[str] = []
    k = skip_ws(text, close + 2)

    def more(shown=parts):
        return ("", [*before, ToolCall("", name, "{" + ",".join(shown))])
    while text.startswith(PARAM, k) or (PARAM.startswith(text[k:]) and PARAM[:1] == text[k:k + 1]):
        j = _literal(text, k, PARAM, more())
        end = text.find('">', j)
        if end < 0:
            raise _More(*more())
        key = text[j:end]
        if props is not None and key not in props:
            raise ValueError(key)
        v0, key_json = end + 2, json.dumps(key, ensure_ascii=False) + ":"
        schema = (props or {}).get(key) if props is not None else None
        raw_text = may_be_string(schema) if isinstance(schema, dict) else False
        v1 = text.find(PARAM_END, v0)
        if v1 < 0:
            shown = [*parts, key_json + json.dumps(held(text[v0:], (PARAM_END,)), ensure_ascii=False)[:-1]]
            raise _More(*more(shown if raw_text else parts))
        raw = text[v0:v1]
        if raw_text or (schema is None and loads(raw) is None and raw != "null"):
            parts.append(key_json + json.dumps(raw, ensure_ascii=False))
        elif loads(raw) is None and raw != "null":
            raise ValueError(key)
        else:
            parts.append(key_json + raw)
        k = skip_ws(text, v1 + len(PARAM_END))
    k = _literal(text, k, INVOKE_END, more())
    k = _literal(text, skip_ws(text, k), CALLS_END, more())
    return ToolCall("", name, "{" + ",".join(parts) + "}"), k
