"""Text scanning shared by every format: partial markers at the end of streamed text, and the extent of a JSON
value that may still be arriving.

Streaming rule (as llama.cpp's lenient partial parse): text is never reported if a later token could turn it into
markup, so a tail that is a proper prefix of a marker is held back, and a JSON value is reported as the raw
prefix seen so far, which only grows.
"""

from __future__ import annotations

import json

WS = " \t\n\r"


def partial_tail(text: str, markers) -> int:
    """Length of the longest tail of `text` that is a proper prefix of one of `markers` (0: none)."""
    best = 0
    for marker in markers:
        for k in range(min(len(marker) - 1, len(text)), best, -1):
            if text.endswith(marker[:k]):
                best = k
                break
    return best


def find_marker(text: str, marker: str, start: int = 0, partial: bool = False) -> tuple[int, bool]:
    """(index, complete) of the first `marker` in text[start:]; when `partial`, a marker cut off by the end of
    the text counts too (complete False). (-1, False) when there is none."""
    at = text.find(marker, start)
    if at >= 0:
        return at, True
    if partial:
        k = partial_tail(text[start:], (marker,))
        if k:
            return len(text) - k, False
    return -1, False


def skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in WS:
        i += 1
    return i


def name_until(text: str, j: int, marker: str) -> tuple[str | None, int]:
    """(name, index of `marker`) for a function name at text[j] that `marker` ends (an XML-style `name="..."`);
    (None, len(text)) while the name may still be arriving, (None, -1) when what came cannot be a name (it holds
    whitespace, '<', '>' or '"': llama.cpp's parse fails there)."""
    at = text.find(marker, j)
    if at < 0:
        name = text[j:len(text) - partial_tail(text[j:], (marker,))]
        return None, (len(text) if not any(c in name for c in WS + '<>"') else -1)
    return text[j:at], at


def string_end(text: str, i: int) -> int | None:
    """Index just past the JSON string opening at text[i] ('"'), or None if the text ends inside it."""
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == '"':
            return j + 1
        j += 1
    return None


def value_end(text: str, i: int) -> int | None:
    """Index just past the JSON value starting at text[i], or None if the text ends before it does. Only the
    structure is checked here; json.loads decides validity."""
    if i >= len(text):
        return None
    ch = text[i]
    if ch == '"':
        return string_end(text, i)
    if ch in "{[":
        depth, j = 0, i
        while j < len(text):
            c = text[j]
            if c == '"':
                end = string_end(text, j)
                if end is None:
                    return None
                j = end
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return None
    j = i
    while j < len(text) and text[j] not in ",}] \t\n\r":
        j += 1
    return j if j < len(text) else None  # a number or literal may still grow


def object_fields(text: str, i: int) -> tuple[dict[str, tuple[int, int | None]], int | None, bool]:
    """Walk the JSON object opening at text[i] ('{'): ({key: (value start, value end or None)}, index just past
    the object or None, ok). `ok` is False when the text is not a JSON object (as far as it goes)."""
    fields: dict[str, tuple[int, int | None]] = {}
    j = skip_ws(text, i + 1)
    if j < len(text) and text[j] == "}":
        return fields, j + 1, True
    while j < len(text):
        if text[j] != '"':
            return fields, None, False
        end = string_end(text, j)
        if end is None:
            return fields, None, True
        key = json.loads(text[j:end])
        j = skip_ws(text, end)
        if j >= len(text):
            return fields, None, True
        if text[j] != ":":
            return fields, None, False
        j = skip_ws(text, j + 1)
        if j >= len(text):
            return fields, None, True
        vend = value_end(text, j)
        fields[key] = (j, vend)
        if vend is None:
            return fields, None, True
        j = skip_ws(text, vend)
        if j >= len(text):
            return fields, None, True
        if text[j] == "}":
            return fields, j + 1, True
        if text[j] != ",":
            return fields, None, False
        j = skip_ws(text, j + 1)
    return fields, None, True


def loads(text: str):
    """json.loads, or None for text that is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None
