"""Grammar rules for free text that stops at a marker, as llama.cpp's `until` and `ac` parsers become rules.

Invariant: `until(name, s)` and `until_any(name, (s,))` accept the same language (any text without `s`);
`through(name, s)` accepts text up to and including the first `s`, and nothing after it."""

from __future__ import annotations

import json


def lit(text: str) -> str:
    """A GBNF string literal."""
    return json.dumps(text, ensure_ascii=False)


def until(name: str, stop: str) -> list[str]:
    """Rules `name` ::= any text that does not contain `stop` (a KMP automaton over its characters, as
    llama.cpp's `until` parsers become rules)."""
    fail = [0] * len(stop)  # KMP failure function
    k = 0
    for i in range(1, len(stop)):
        while k and stop[i] != stop[k]:
            k = fail[k - 1]
        k += stop[i] == stop[k]
        fail[i] = k
    chars = sorted(set(stop))

    def step(state: int, c: str) -> int:
        while state and stop[state] != c:
            state = fail[state - 1]
        return state + (stop[state] == c)

    def state_name(s: int) -> str:
        return name if s == 0 else f"{name}-{s:02d}"

    def cls(cs) -> str:
        return "".join("\\" + c if c in "]\\^-[" else ("\\n" if c == "\n" else c) for c in cs)

    rules = []
    for s in range(len(stop)):
        nexts = {c: step(s, c) for c in chars}
        moves = {c: t for c, t in nexts.items() if 0 < t < len(stop)}  # the rest back to 0, or `stop` (barred)
        barred = sorted(c for c, t in nexts.items() if t)
        alts = ['""', *(f"[{cls(c)}] {state_name(t)}" for c, t in sorted(moves.items()))]
        alts.append(f"[^{cls(barred)}] {name}")
        rules.append(f"{state_name(s)} ::= {' | '.join(alts)}")
    return rules


def _stop_rules(name: str, stops: tuple[str, ...], including: bool) -> list[str]:
    """A state per proper prefix of a stop (the longest one the text ends with), as llama.cpp's Aho-Corasick
    rules: `including`, the text runs up to and including the first stop; else it contains none."""
    prefixes = sorted({s[:i] for s in stops for i in range(len(s))}, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(prefixes)}
    chars = sorted(set("".join(stops)))

    def step(state: str, c: str) -> str | None:  # None: a stop is complete
        text = state + c
        if any(text.endswith(s) for s in stops):
            return None
        return next(text[i:] for i in range(len(text) + 1) if text[i:] in index)

    def state_name(p: str) -> str:
        return name if not p else f"{name}-{index[p]:02d}"

    def cls(cs) -> str:
        return "".join("\\" + c if c in "]\\^-[" else ("\\n" if c == "\n" else c) for c in cs)

    rules = []
    for p in prefixes:
        nexts = {c: step(p, c) for c in chars}
        done = [c for c, t in nexts.items() if t is None]
        alts = [f"[{cls(done)}]"] if including and done else [] if including else ['""']
        alts += [f"[{cls(c)}] {state_name(t)}" for c, t in nexts.items() if t]
        alts.append(f"[^{cls([c for c, t in nexts.items() if t != ''])}] {name}")
        rules.append(f"{state_name(p)} ::= {' | '.join(alts)}")
    return rules


def until_any(name: str, stops: tuple[str, ...]) -> list[str]:
    """Rules `name` ::= any text that contains none of `stops` (llama.cpp's `until` rules; the same language as
    `until` for one stop)."""
    return _stop_rules(name, stops, including=False)


def through(name: str, stop: str) -> list[str]:
    """Rules `name` ::= any text up to and including the first `stop` (llama.cpp's `ac` rules)."""
    return _stop_rules(name, (stop,), including=True)
