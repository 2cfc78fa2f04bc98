"""ToolStream: one reply's answer parsed while it streams, as llama-server re-parses the whole message after
every token (common_chat_peg_parse with is_partial) and sends the difference.

Content is released only once it cannot turn into call markup; calls appear once named, their arguments
growing. The final parse (`finish`) is the one-shot parse of the whole text.
"""

from __future__ import annotations

from app.engine.chat_parse.parse import parse
from app.engine.chat_parse.types import Format, ParsedMessage, ToolCall


class ToolStream:
    """Feed it the answer's text deltas (thinking already split off); read `content` and `calls`."""

    def __init__(self, fmt: Format, tools=(), reasoning_format: str = "none"):
        self.fmt = fmt
        self.tools = tuple(tools)
        self.reasoning_format = reasoning_format
        self.text = ""
        self.content = ""
        self.calls: tuple[ToolCall, ...] = ()
        self.message = ParsedMessage()

    def feed(self, delta: str) -> tuple[str, bool]:
        """Take the next answer text: (content delta now decided, whether the calls changed)."""
        if not delta:
            return "", False
        self.text += delta
        return self._update(parse(self.text, self.fmt, partial=True, reasoning_format=self.reasoning_format,
                                  tools=self.tools))

    def finish(self) -> tuple[str, bool]:
        """The reply ended: the whole text parsed once more, not partial."""
        return self._update(parse(self.text, self.fmt, partial=False, reasoning_format=self.reasoning_format,
                                  tools=self.tools))

    def _update(self, message: ParsedMessage) -> tuple[str, bool]:
        self.message = message
        old, new = self.content, message.content
        delta = new[len(old):] if new.startswith(old) else ""
        if new.startswith(old):
            self.content = new
        changed = message.tool_calls != self.calls
        self.calls = message.tool_calls
        return delta, changed
