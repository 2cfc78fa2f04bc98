"""parse(text, format): a reply as llama.cpp's common_chat_peg_parse returns it: reasoning, content, tool calls.

Partial parsing (`partial=True`, a reply still streaming) reports only what well-formed text can keep: a tail
that may become a marker is held back from content and reasoning, and a call appears once its name is complete,
with arguments that only grow as long as the text goes on reading as calls (text that breaks a call makes
llama.cpp's parse drop it, and this one too; ToolStream keeps such calls as they were streamed).
"""

from __future__ import annotations

from app.engine.chat.parse import (
    cohere2moe,
    dsml,
    functionary,
    gemma4,
    generic,
    harmony,
    kimi_k3,
    ling3,
    minicpm5,
    minimax_m3,
    muse_glimmer,
)
from app.engine.chat.parse.calls import FAIL, held, json_call, pythonic_calls, tag_json_call, tagged_call
from app.engine.chat.parse.scan import find_marker, skip_ws
from app.engine.chat.parse.types import Format, ParsedMessage, ToolCall

REASONING_FORMATS = ("auto", "deepseek", "deepseek-legacy", "none")
CONTENT = Format("content")
_READERS = {"json": json_call, "tag_json": tag_json_call, "tagged": tagged_call, "gemma4": gemma4.call,
            "minimax-m3": minimax_m3.call, "dsml": dsml.call, "minicpm5": minicpm5.call}


def parse(text: str, fmt: Format, *, partial: bool = False, reasoning_format: str = "auto",
          opened: bool = False, tools=(), calls: bool = True, response_format: bool = False) -> ParsedMessage:
    """The reply `text` in format `fmt`. `opened`: the generation prompt already opened the thinking block;
    `reasoning_format` "none" leaves thinking in the content (llama-server's --reasoning-format none);
    `calls` False: the request offered no tools, so call markup is content (llama.cpp builds no call parser);
    `response_format`: the request set a JSON schema, so the answer is that JSON (no calls), unfenced."""
    if response_format and fmt.kind != "harmony":
        got = parse(text, fmt, partial=partial, reasoning_format=reasoning_format, opened=opened, calls=False)
        return ParsedMessage(unfence(got.content, partial), got.reasoning_content, ())
    if fmt.kind == "generic":
        return generic.parse(text, partial=partial, calls=calls)
    if fmt.kind == "harmony":
        return harmony.parse(text, partial=partial, reasoning=reasoning_format != "none", tools=tools)
    if fmt.kind == "functionary-v3.2":
        return functionary.parse(text, partial=partial)
    if fmt.kind == "muse-glimmer":
        return muse_glimmer.parse(text, partial=partial, reasoning=reasoning_format != "none", tools=tools,
                                  calls=calls)
    if fmt.kind == "ling3":
        return ling3.parse(text, fmt, partial=partial, reasoning=reasoning_format != "none", opened=bool(opened),
                           tools=tools, calls=calls, read_calls=read_calls)
    if fmt.kind == "gemma4":
        return _gemma4(text, fmt, partial, reasoning_format != "none", opened, tools if calls else None)
    if fmt.kind == "kimi-k3":
        return kimi_k3.parse(text, partial=partial, reasoning=reasoning_format != "none", tools=tools, calls=calls)
    think = fmt.think if reasoning_format != "none" else None
    opened = opened or fmt.extra.get("opened", False)  # Cohere2 MoE: its generation prompt always opens it
    if opened and not think and fmt.think:  # thinking left in the content keeps the tag the prompt opened it with
        text = (opened if isinstance(opened, str) else fmt.think[0]) + text
    if think and not opened and fmt.extra.get("bare_think_end"):  # MiniMax-M3: a turn without thinking
        stripped = text.lstrip()  # may start with a bare end tag, which is dropped
        if stripped.startswith(think[1]):
            text = stripped[len(think[1]):]
        elif partial and stripped and think[1].startswith(stripped):
            return ParsedMessage()
    stop = (fmt.triggers if calls and fmt.think_ends_at_call else ()) + fmt.extra.get("think_stops", ())
    reasoning, rest = split_reasoning(text, think, partial, opened, stop)
    if reasoning and isinstance(opened, str) and fmt.extra.get("keep_opening"):
        reasoning = opened + reasoning  # Apriel 1.6: the prompt's "Here are my reasoning steps:" is reasoning
    content, calls = split_calls(rest, fmt if calls else CONTENT, partial, tools)
    return ParsedMessage(unwrap(content, fmt.wrap, partial), reasoning, tuple(calls))


def _gemma4(text: str, fmt: Format, partial: bool, reasoning: bool, opened, tools) -> ParsedMessage:
    """common/parsers/gemma4.cpp: its messages (gemma4.messages), then, with tools (`tools` not None), any text up
    to the first `<|tool_call>` (dropped) and the calls; text after them is not part of the message."""
    if opened:
        text = (opened if isinstance(opened, str) else fmt.think[0]) + text
    thought, content, k = gemma4.messages(text, fmt.think, partial, reasoning, tools is not None)
    found: list[ToolCall] = []
    if tools is not None:
        at, complete = find_marker(text, gemma4.CALL, k, partial)
        if at >= 0 and complete:
            found, _, ok = read_calls(text, at, fmt, partial, tools)
            found = found if ok else []
    return ParsedMessage(content, thought, tuple(found))


def split_reasoning(text: str, tags, partial: bool, opened, stop=()) -> tuple[str, str]:
    """(reasoning, the rest): a block opened by `tags[0]` at the start (or by the prompt) up to `tags[1]` (or
    up to `stop`, a call's start, left in the rest); one never closed is all reasoning."""
    if not tags:
        return "", text
    start, end = tags
    body = text
    if not opened:
        stripped = text.lstrip()
        if start and stripped.startswith(start):
            body = stripped[len(start):]
        elif partial and start and start.startswith(stripped):
            return "", ""
        else:
            return "", text
    at, complete = find_marker(body, end, 0, partial)
    cuts = [hit for hit in (find_marker(body, s, 0, partial) for s in stop) if hit[0] >= 0]
    if cuts:
        cut, cut_complete = min(cuts)
        if at < 0 or cut < at:
            return body[:cut].strip(), body[cut:] if cut_complete else ""
    if at >= 0 and complete:
        return body[:at].strip(), body[at + len(end):].lstrip()
    return (body[:at] if at >= 0 else body).strip(), ""


def unwrap(content: str, wrap: tuple[str, str], partial: bool) -> str:
    """Content without the markers a format wraps it in (Granite's <response>, Command R7B's)."""
    start, end = wrap
    if start:
        at, complete = find_marker(content, start, 0, partial)
        if at >= 0:
            content = content[:at] + (content[at + len(start):] if complete else "")
        if end:
            at, _ = find_marker(content, end, 0, partial)
            content = content[:at] if at >= 0 else content
    return content


def unfence(content: str, partial: bool) -> str:
    """A response-format answer without its optional ```json ... ``` fence (the handlers' response-format
    parsers: the auto-parser's and Muse Glimmer's accept it, Ministral 3's, Gemma 4's, MiniMax-M3's and DeepSeek's
    require it); a partial fence is held back."""
    body = content.strip()
    if partial and body and FENCE.startswith(body):
        return ""
    if not body.startswith(FENCE):
        return content
    body = body[len(FENCE):].strip()
    if body.endswith("```"):
        return body[:-3].strip()
    tail = next((n for n in (2, 1) if partial and body.endswith("`" * n)), 0)
    return body[:len(body) - tail].rstrip()


FENCE = "```json"


def split_calls(text: str, fmt: Format, partial: bool, tools) -> tuple[str, list[ToolCall]]:
    """(content before the calls, the calls). Calls that do not read as calls stay content."""
    if fmt.kind == "none":
        return text, []
    at = -1
    if fmt.start_json and text.lstrip()[:1] in ("{", "["):
        at = len(text) - len(text.lstrip())
    elif fmt.extra.get("calls_first"):  # Cohere2 MoE: calls only right after the thinking, else text
        at, complete = cohere2moe.body_start(text, fmt, partial)
        if at >= 0 and not complete:
            return text[:at], []
        if at < 0:
            return text, []
    else:
        triggers = fmt.triggers
        hits = [hit for hit in (find_marker(text, t, 0, partial) for t in triggers) if hit[0] >= 0]
        at, complete = min(hits) if hits else (-1, False)
        if at >= 0 and not complete:
            return _before(text, at, fmt), []
    if at < 0:
        sep = fmt.extra.get("content_sep", "")
        return (held(text, (*triggers, *(sep + t for t in triggers if sep))) if partial else text), []
    calls, end, ok = read_calls(text, at, fmt, partial, tools)
    if not ok or (not calls and not partial):
        return (text if not partial else _before(text, at, fmt)), []
    content = _before(text, at, fmt)
    if not partial and end < len(text):
        content += text[end:]
    return content, calls


def _before(text: str, at: int, fmt: Format) -> str:
    """The content before the calls at text[at]; without the `content_sep` right in front of them (DeepSeek
    V3.2's `\\n\\n`: its content is `until_one_of` that separator with the marker, or the marker)."""
    sep = fmt.extra.get("content_sep", "")
    return text[:at - len(sep)] if sep and text.endswith(sep, 0, at) else text[:at]


def read_calls(text: str, i: int, fmt: Format, partial: bool, tools) -> tuple[list[ToolCall], int, bool]:
    """The calls from the trigger at text[i]: (calls, index after them, ok)."""
    start, end = fmt.section
    j = i + len(start) if start and text.startswith(start, i) else i
    if fmt.kind == "pythonic":
        calls, k, ok = pythonic_calls(text, skip_ws(text, j), partial, tools)
        if ok:
            k = max(_expect(text, k, end), k)
        return calls, k if ok else len(text), ok or (partial and k != -1)
    reader = _READERS[fmt.kind]
    calls: list[ToolCall] = []
    comma = fmt.extra.get("comma_calls", False)
    if fmt.array:
        j = skip_ws(text, j)
        if j >= len(text):
            return calls, j, partial
        if text[j] != "[":
            return calls, j, False
        j += 1
    while True:
        j = skip_ws(text, j)
        if j >= len(text):
            return calls, j, partial or bool(calls)
        if fmt.array and calls:
            if text[j] == "]":
                j += 1
                break
            if text[j] != ",":  # text after the calls, which llama.cpp's parser refuses: the calls stay calls
                return calls, j, True
            j = skip_ws(text, j + 1)
        elif comma and calls:  # another call only after a comma (standard_json_tools: space "," space)
            if text[j] != ",":
                break
            j = skip_ws(text, j + 1)
        for marker in (fmt.call[0], fmt.name_prefix):
            if not marker:
                continue
            j = skip_ws(text, j) if marker is fmt.name_prefix else j
            if text.startswith(marker, j):
                j += len(marker)
            elif partial and marker.startswith(text[j:]):
                return calls, len(text), True
            elif marker is fmt.call[0] and fmt.optional_start and fmt.name_prefix:
                continue
            elif calls:
                return calls, _after(text, j, end), True
            else:
                return calls, j, False
        if fmt.kind == "json":
            call, j, finished = json_call(text, skip_ws(text, j), fmt, tools, partial)
        else:
            call, j, finished = reader(text, j, fmt, tools)
        if (call, j, finished) == FAIL:
            return calls, j, False
        if call is not None:
            calls.append(call)
        if not finished:
            return calls, len(text), partial
        j = _expect(text, j, fmt.call[1])
        if j < 0:
            return calls, len(text), partial
        if not fmt.call[0] and not fmt.array and not comma:
            break
    return calls, _after(text, j, end), True


def _after(text: str, j: int, end: str) -> int:
    k = _expect(text, j, end)
    return len(text) if k < 0 else k


def _expect(text: str, j: int, marker: str) -> int:
    """Index after `marker` (after whitespace) at j; j itself when the marker is absent or empty; -1 when the
    text ends inside it."""
    if not marker:
        return j
    k = skip_ws(text, j)
    if text.startswith(marker, k):
        return k + len(marker)
    rest = text[k:]
    return -1 if rest and marker.startswith(rest) else j
