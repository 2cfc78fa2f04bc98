r"""A list of strings typed on one line: comma-separated, with `\n`, `\t`, `\,` and `\\` escapes (stop strings,
DRY's sequence breakers). `format_stops` is the inverse of `parse_stops`."""

from __future__ import annotations


def parse_stops(text: str) -> list[str]:
    r"""Comma-separated stop strings; `\n` and `\t` mean newline and tab, `\,` a literal comma."""
    parts, current, i = [], "", 0
    escapes = {"n": "\n", "t": "\t", ",": ",", "\\": "\\"}
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in escapes:
            current += escapes[text[i + 1]]
            i += 2
            continue
        if ch == ",":
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    parts.append(current)
    return [p.strip(" ") for p in parts if p.strip(" ")]


def format_stops(stops) -> str:
    r"""The inverse of parse_stops: what the stop field shows for a tuple of stop strings."""
    escape = {"\n": r"\n", "\t": r"\t", ",": r"\,", "\\": "\\\\"}
    return ", ".join("".join(escape.get(ch, ch) for ch in stop) for stop in stops)
