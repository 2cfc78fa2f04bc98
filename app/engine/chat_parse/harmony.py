"""GPT-OSS's harmony format (llama.cpp's common_chat_params_init_gpt_oss): a reply is messages
`<|channel|>NAME[ to=functions.TOOL][ <|constrain|>json]<|message|>BODY` ended by <|end|>, <|call|> or
<|return|>, later ones opened by `<|start|>assistant`. The analysis channel is reasoning, final (or commentary
without a recipient) is content, a message to `functions.TOOL` is a call whose body is its JSON arguments."""

from __future__ import annotations

import re

from app.engine.chat_parse.scan import loads, partial_tail, value_end
from app.engine.chat_parse.types import ParsedMessage, ToolCall

ENDS = ("<|end|>", "<|call|>", "<|return|>")
START, CHANNEL, MESSAGE = "<|start|>", "<|channel|>", "<|message|>"
_RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")
_MARKERS = (*ENDS, START, CHANNEL, MESSAGE)


def parse(text: str, *, partial: bool, reasoning: bool = True, tools=()) -> ParsedMessage:
    if CHANNEL not in text and not (partial and partial_tail(text, (CHANNEL,)) == len(text.strip())):
        return ParsedMessage(content=text)
    thoughts, content, calls = [], [], []
    i = 0
    while i < len(text):
        at = text.find(MESSAGE, i)
        if at < 0:
            break  # a header still arriving
        header = text[i:at]
        body_start = at + len(MESSAGE)
        ends = [(text.find(e, body_start), e) for e in (*ENDS, START)]
        ends = [(k, e) for k, e in ends if k >= 0]
        k, marker = min(ends) if ends else (len(text), "")
        body = text[body_start:k]
        finished = bool(marker)
        if not finished and partial:
            body = body[:len(body) - partial_tail(body, _MARKERS)]
        recipient = _RECIPIENT.search(header)
        if recipient:
            args = body.strip()
            if finished or not partial:
                if loads(args) is None:
                    return ParsedMessage(content=text)
            elif args and value_end(args, 0) is None and not args.startswith("{"):
                args = ""
            calls.append(ToolCall("", recipient.group(1), args))
        elif "analysis" in header.split(CHANNEL)[-1][:10] and reasoning:
            thoughts.append(body)
        else:
            content.append(body if reasoning or "analysis" not in header else text[i:k])
        i = k + len(marker)
        if marker == "<|end|>" or marker == "<|call|>":
            nxt = text.find(CHANNEL, i)
            i = nxt if nxt >= 0 else len(text)
        elif marker == START:
            nxt = text.find(CHANNEL, i)
            if nxt < 0:
                break
            i = nxt if "to=" not in text[i:nxt] else i
    return ParsedMessage("".join(content), "".join(thoughts).strip(), tuple(calls))
