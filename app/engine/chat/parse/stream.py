"""ToolStream: one reply's answer parsed while it streams, as llama-server re-parses the whole message after
every token (common_chat_peg_parse with is_partial) and sends the difference.

Content is released only once it cannot turn into call markup; calls appear once named, their arguments
growing. A parse whose calls do not extend the streamed ones (a call lost or rewritten: the text stopped reading
as those calls, e.g. text after them) leaves the streamed calls as they were from then on, as llama-server's
stream ends there (`common_chat_msg_diff::compute_diffs` refuses the diff, HTTP 500). The final parse
(`finish`) is the one-shot parse of the whole text. A reply cut before its end (by the token limit or a Stop)
whose one-shot parse has no calls keeps the calls it had completed (`cut_message`): the call being written when it
was cut is dropped, with the markup around it, so a stopped reply still shows its finished calls.
"""

from __future__ import annotations

import dataclasses
import json

from app.engine.chat.parse.detect import detect
from app.engine.chat.parse.parse import parse
from app.engine.chat.parse.types import Format, ParsedMessage, ToolCall

CUT_REASONS = ("length", "cancelled")  # finish reasons of a reply cut before its end: its complete calls are kept


class ToolStream:
    """Feed it the answer's text deltas (thinking already split off); read `content` and `calls`."""

    def __init__(self, fmt: Format, tools=(), reasoning_format: str = "none", prefix: str = ""):
        """`prefix`: answer text the reply starts with that was not generated (a reply prefix): parsed with
        the rest, never released as a delta."""
        self.fmt = fmt
        self.tools = tuple(tools)
        self.reasoning_format = reasoning_format
        self.text = self.prefix = prefix
        self.calls: tuple[ToolCall, ...] = ()
        self.message = self._parse(partial=True)
        self.prefix_content = self.message.content
        self.content = ""  # released content, the prefix's part excluded
        self.frozen = False  # a partial parse broke the streamed calls: they no longer change until `finish`
        self._final: tuple[tuple[int, bool], ParsedMessage] | None = None

    def feed(self, delta: str) -> tuple[str, bool]:
        """Take the next answer text: (content delta now decided, whether the calls changed)."""
        if not delta:
            return "", False
        self.text += delta
        return self._update(self._parse(partial=True), partial=True)

    def finish(self, cut: bool = False) -> tuple[str, bool]:
        """The reply ended: the whole text parsed once more, not partial (`cut`: it was cut before its end)."""
        return self._update(self.final(cut), partial=False)

    def final(self, cut: bool = False) -> ParsedMessage:
        """The one-shot parse of the text so far (as if the reply ended here); `cut`: the reply was cut before its
        end (token limit, Stop), so a one-shot parse without calls gives way to the calls completed before the cut
        (`cut_message`)."""
        if self._final is None or self._final[0] != (len(self.text), cut):
            message = self._parse(partial=False)
            if cut and not message.tool_calls:
                message = self.cut_message() or message
            self._final = (len(self.text), cut), message
        return self._final[1]

    def cut_message(self) -> ParsedMessage | None:
        """The partial parse of a cut reply with only its complete calls (arguments that read as JSON): the call
        being written when the reply was cut is left out. None when no call was complete."""
        message = self._parse(partial=True)
        calls = tuple(c for c in message.tool_calls if complete_json(c.arguments))
        return dataclasses.replace(message, tool_calls=calls) if calls else None

    def dropped_at_cut(self, cut: bool) -> int:
        """How many named calls the cut reply's final parse left out (being written when it was cut)."""
        if not cut:
            return 0
        return max(0, len(self._parse(partial=True).tool_calls) - len(self.final(cut).tool_calls))

    def final_content(self, cut: bool = False) -> str:
        """The final content without the reply prefix's part (what the caller did not already have)."""
        return self._visible(self.final(cut).content)

    def _visible(self, content: str) -> str:
        for known in (self.prefix, self.prefix_content):
            if known and content.startswith(known):
                return content[len(known):]
        return content

    def _parse(self, partial: bool) -> ParsedMessage:
        return parse(self.text, self.fmt, partial=partial, reasoning_format=self.reasoning_format, tools=self.tools)

    def _update(self, message: ParsedMessage, partial: bool) -> tuple[str, bool]:
        self.message = message
        old, new = self.content, self._visible(message.content)
        delta = new[len(old):] if new.startswith(old) else ""
        if new.startswith(old):
            self.content = new
        if partial and (self.frozen or not extends(self.calls, message.tool_calls)):
            self.frozen = True
            return delta, False
        changed = message.tool_calls != self.calls
        self.calls = message.tool_calls
        return delta, changed


def complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def extends(old: tuple[ToolCall, ...], new: tuple[ToolCall, ...]) -> bool:
    """Whether `new` continues the calls `old` streamed: as many or more, each old call's name the same and its
    arguments a prefix of the new ones (llama-server's diff rule)."""
    return len(new) >= len(old) and all(a.name == b.name and b.arguments.startswith(a.arguments)
                                        for a, b in zip(old, new, strict=False))


def for_request(template_source: str | None, request, prefix: str = "", fmt: Format | None = None) \
        -> ToolStream | None:
    """The stream that parses a request's reply for calls: None when it offers no tools (or tool_choice "none"),
    or its template's replies carry no calls. `fmt`: the replies' format when it is not the template's (the generic
    format of a template without one, app/engine/chat/template/generic.py)."""
    if not request.tools or request.tool_choice == "none":
        return None
    fmt = fmt or detect(template_source)
    return None if fmt.kind == "none" else ToolStream(fmt, request.tools, prefix=prefix)


def call_stops(stream: ToolStream | None) -> tuple[str, ...]:
    """The call starts that also end a `<think>` block in this stream's format (its `think_ends_at_call`, as
    llama.cpp's thinking_end_tags): () without tools or for the other formats."""
    fmt = stream.fmt if stream is not None else None
    return fmt.triggers if fmt is not None and fmt.think_ends_at_call and fmt.think == ("<think>", "</think>") else ()


def call_dicts(calls, request_id: int) -> tuple[dict, ...]:
    """Calls as Completion.tool_calls holds them: {id, name, arguments}; a call the model gave no id gets
    `call_<request>_<index>` (llama-server makes up a random one)."""
    return tuple({"id": c.id or f"call_{request_id}_{i}", "name": c.name, "arguments": c.arguments}
                 for i, c in enumerate(calls))
