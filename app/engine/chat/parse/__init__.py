"""Chat output parsing as llama.cpp parses it (common/chat.cpp and its PEG auto-parser): which format a
template's replies use (`detect`), and a reply split into content, reasoning and tool calls (`parse`), whole or
while it streams. docs/tools.md maps the modules to llama.cpp's files."""

from app.engine.chat.parse.detect import detect, opened_thinking
from app.engine.chat.parse.formats import ALL, BY_NAME
from app.engine.chat.parse.parse import REASONING_FORMATS, parse
from app.engine.chat.parse.stream import ToolStream
from app.engine.chat.parse.types import Format, ParsedMessage, ToolCall

__all__ = ["ALL", "BY_NAME", "REASONING_FORMATS", "Format", "ParsedMessage", "ToolCall", "ToolStream", "detect",
           "opened_thinking", "parse"]
