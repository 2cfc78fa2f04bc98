"""GPT-OSS's harmony format (llama.cpp's common/parsers/gpt-oss.cpp): a reply is messages
`[<|start|>assistant][ to=RECIPIENT]<|channel|>NAME[ to=RECIPIENT][ <|constrain|>json]<|message|>BODY`, each
ended by <|end|>, <|call|> or <|return|> (or the next <|start|>). The analysis channel is reasoning, final (or
commentary without a recipient) is content, a message to `functions.TOOL` is a call whose body is its JSON
arguments; a message to a built-in tool (`container.exec`...) is neither."""

from __future__ import annotations

import re

from app.engine.chat.parse.scan import loads, partial_tail
from app.engine.chat.parse.types import ParsedMessage, ToolCall

ENDS = ("<|end|>", "<|call|>", "<|return|>")
START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
_RECIPIENT = re.compile(r"to=([^\s<]+)")
_MARKERS = (*ENDS, START, CHANNEL, MESSAGE)


def parse(text: str, *, partial: bool, reasoning: bool = True, tools=()) -> ParsedMessage:
    if CHANNEL not in text and START not in text:
        if partial and partial_tail(text, (CHANNEL,)) == len(text) and text:
            return ParsedMessage()
        return ParsedMessage(content=text)
    thoughts, content, calls = [], [], []
    i = 0
    while i < len(text):
        at = text.find(MESSAGE, i)
        if at < 0:
            break  # a header still arriving
        header = text[i:at]
        body_start = at + len(MESSAGE)
        ends = [(k, e) for k, e in ((text.find(e, body_start), e) for e in (*ENDS, START)) if k >= 0]
        k, marker = min(ends) if ends else (len(text), "")
        body = text[body_start:k]
        if not marker and partial:
            body = body[:len(body) - partial_tail(body, _MARKERS)]
        channel = header.split(CHANNEL)[-1].split()[0] if CHANNEL in header else ""
        recipient = next((m for m in _RECIPIENT.finditer(header) if m.group(1) != "assistant"), None)
        if recipient and recipient.group(1).startswith("functions."):
            args = body.strip()
            if (marker or not partial) and loads(args) is None:
                return ParsedMessage(content=text)
            calls.append(ToolCall("", recipient.group(1)[len("functions."):], args))
        elif recipient:
            pass  # a built-in tool's call: not a function call, not content
        elif channel == "analysis":
            if reasoning:
                thoughts.append(body)
            else:
                content.append(text[i:k + (len(marker) if marker != START else 0)])
        else:
            content.append(body)
        i = k + (len(marker) if marker != START else len(START))
    return ParsedMessage("".join(content), "".join(thoughts).strip(), tuple(calls))
