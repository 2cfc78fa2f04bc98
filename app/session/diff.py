"""How two outputs differ: word-level opcodes for a side-by-side highlight, the first divergent token, and a
similarity figure. The standard library's difflib does the matching."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

# A word with the whitespace after it, or a run of punctuation: the units a reader compares.
_WORDS = re.compile(r"\w+\s*|[^\w\s]+\s*|\s+", re.UNICODE)


@dataclass(frozen=True)
class Op:
    tag: str  # "equal", "replace", "delete" (only in a) or "insert" (only in b)
    a: str
    b: str


def split_words(text: str) -> list[str]:
    """Words with their trailing whitespace; joining them gives `text` back."""
    return _WORDS.findall(text)


def words(a: str, b: str) -> list[Op]:
    """Word-level opcodes turning `a` into `b`; the `a` parts join to `a` and the `b` parts to `b`."""
    wa, wb = split_words(a), split_words(b)
    matcher = difflib.SequenceMatcher(None, [w.strip() for w in wa], [w.strip() for w in wb], autojunk=False)
    return [Op(tag, "".join(wa[i1:i2]), "".join(wb[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]


def similarity(a: str, b: str) -> float:
    """1.0 for identical texts, 0.0 for nothing in common (difflib's ratio over words)."""
    if not a and not b:
        return 1.0
    wa, wb = [w.strip() for w in split_words(a)], [w.strip() for w in split_words(b)]
    return difflib.SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def first_divergence(token_ids_a, token_ids_b) -> int | None:
    """Index of the first position where the two token sequences differ (the shorter one's length if one is a
    prefix of the other), or None if they are identical."""
    for index, (x, y) in enumerate(zip(token_ids_a, token_ids_b, strict=False)):
        if x != y:
            return index
    if len(token_ids_a) != len(token_ids_b):
        return min(len(token_ids_a), len(token_ids_b))
    return None
