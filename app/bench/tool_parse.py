"""The tool-call parser's cost per token (app/engine/chat/parse): a reply streamed through ToolStream as the engine
streams it, about four characters a token, re-parsed after each one as llama-server does. No model: the figure
is the parser's own CPU time, to set beside the engine's time per token."""

from __future__ import annotations

import time

CHARS_PER_TOKEN = 4


def _replies() -> dict[str, str]:
    words = "The weather in Paris is mild today, with light wind and a chance of rain later. "
    arguments = '{"city": "Paris", "notes": "' + "sunny spells " * 40 + '"}'
    return {"plain": words * 40,  # ~3.2k characters of content, no call
            "call": words * 4 + '<tool_call>\n{"name": "get_weather", "arguments": ' + arguments + "}\n</tool_call>"}


def parser_cost_us(repeats: int = 5) -> dict[str, float]:
    """Microseconds of parsing per streamed token, best of `repeats`, for a plain reply and one with a call."""
    from app.engine.chat.parse import BY_NAME, ToolStream

    out = {}
    for label, text in _replies().items():
        pieces = [text[i:i + CHARS_PER_TOKEN] for i in range(0, len(text), CHARS_PER_TOKEN)]
        best = float("inf")
        for _ in range(repeats):
            stream = ToolStream(BY_NAME["hermes"])
            start = time.perf_counter()
            for piece in pieces:
                stream.feed(piece)
            stream.finish()
            best = min(best, (time.perf_counter() - start) / len(pieces))
        out[label] = best * 1e6
        out[f"{label}_tokens"] = len(pieces)
    return out
