"""Where the calls of the Cohere formats may start. Cohere2 MoE ("North Code", llama.cpp's
common/parsers/cohere2moe.cpp): the generation prompt always opens
`<|START_THINKING|>`, and after the thinking block the reply is EITHER text, `<|START_TEXT|>...<|END_TEXT|>`, OR
calls, `<|START_ACTION|>[{"tool_call_id": ..., "tool_name": ..., "parameters": {...}}, ...]<|END_ACTION|>`.

So call markup inside the text (after `<|START_TEXT|>`) is text, not a call; the thinking ends at
`<|END_THINKING|>` or where the text or the calls begin. `body_start` finds where the calls may begin: right after
the thinking block, which stays in the content when thinking is not split off (llama-server's
`--reasoning-format none`, and the engine's stream, whose thinking is split before the answer is parsed).

Command R7B (llama.cpp's auto-parser, common/chat-auto-parser-generator.cpp, its content always wrapped):
one optional thinking block, then optionally `<|START_RESPONSE|>...<|END_RESPONSE|>`, then the calls; any other
text there (a second thinking block) ends llama.cpp's parse, so the calls after it are text. Command R+ (the
same analysis, its content wrapped in `<|CHATBOT_TOKEN|>...<|END_OF_TURN_TOKEN|>` by the analysis' Cohere patch
in common/chat-diff-analyzer.cpp, no thinking): its calls are `Action:\n```json\n[{"tool_name": ...,
"parameters": {...}}, ...]```` after that optional wrapped text.
"""

from __future__ import annotations

from app.engine.chat.parse.scan import find_marker, skip_ws
from app.engine.chat.parse.types import Format

THINK_START, THINK_END = "<|START_THINKING|>", "<|END_THINKING|>"
TEXT_START, ACTION_START = "<|START_TEXT|>", "<|START_ACTION|>"


def body_start(text: str, fmt: Format, partial: bool) -> tuple[int, bool]:
    """(index, complete) of the calls' `<|START_ACTION|>` when it is what follows the thinking block (or starts
    the text); (-1, False) when the reply is text (or the thinking has not ended yet)."""
    k = skip_ws(text, 0)
    if fmt.think and text.startswith(THINK_START, k):
        ends = [hit for hit in (find_marker(text, m, k, partial) for m in (THINK_END, TEXT_START, ACTION_START))
                if hit[0] >= 0]
        if not ends:
            return -1, False
        at, complete = min(ends)
        if not complete:
            return -1, False
        k = at + len(THINK_END) if text.startswith(THINK_END, at) else at
    if fmt.extra.get("wrapped_text_first"):  # Command R7B: <|START_RESPONSE|>...<|END_RESPONSE|> may come first
        k = skip_ws(text, k)
        start, end = fmt.wrap
        if text.startswith(start, k):
            at, complete = find_marker(text, end, k, partial)
            if at < 0 or not complete:
                return -1, False
            k = skip_ws(text, at + len(end))
    action = fmt.section[0]  # <|START_ACTION|>; Command R+'s "Action:\n```json\n"
    if text.startswith(action, k):
        return k, True
    if partial and k < len(text) and action.startswith(text[k:]):
        return k, False
    return -1, False
