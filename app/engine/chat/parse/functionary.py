"""Functionary v3.2 (llama.cpp's common/parsers/functionary-v3-2.cpp): the generation prompt ends with `>>>`, and
a reply is blocks `RECIPIENT\\nBODY` separated by `>>>`: recipient `all` is content, any other is a call whose body
is its JSON arguments."""

from __future__ import annotations

import re

from app.engine.chat.parse.scan import loads, partial_tail, skip_ws, value_end
from app.engine.chat.parse.types import ParsedMessage, ToolCall

SEP = ">>>"
_NAME = re.compile(r"[\w.-]+")


def parse(text: str, *, partial: bool) -> ParsedMessage:
    content, calls = [], []
    blocks = text.split(SEP)
    for n, block in enumerate(blocks):
        last = n == len(blocks) - 1
        newline = block.find("\n")
        if newline < 0:
            if last and partial:
                break  # the recipient is still arriving
            if n == 0 and not last:
                continue
            content.append(block)
            continue
        name, body = block[:newline].strip(), block[newline + 1:]
        if name == "all":
            if last and partial:
                body = body[:len(body) - partial_tail(body, (SEP,))]
            content.append(body)
            continue
        j = skip_ws(body, 0)
        if not _NAME.fullmatch(name) or (j < len(body) and body[j] != "{"):
            return ParsedMessage(content=text)
        end = value_end(body, j) if j < len(body) else None
        if end is None:
            if not (last and partial):
                return ParsedMessage(content=text)
            calls.append(ToolCall("", name, body[j:]))
            continue
        if loads(body[j:end]) is None:
            return ParsedMessage(content=text)
        calls.append(ToolCall("", name, body[j:end]))
    return ParsedMessage("".join(content), "", tuple(calls))
