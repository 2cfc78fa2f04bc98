"""Word error rate: how far a reply (a transcription, say) is from a reference text, in words.

Both texts are normalised with jiwer's transforms before they are compared: lower case, punctuation removed
(not replaced: "don't" is "dont", "state-of-the-art" one word), every run of whitespace (newlines too) one
space, trimmed, split into words. jiwer then aligns the two word lists (a Levenshtein alignment) and counts the
substituted, deleted and inserted words; the rate is their sum over the reference's words. It can pass 100 %
when the reply adds words.

A reference with no words has no rate: nothing can be divided by its length. `WordErrors.rate` is 0.0 when the
reply has no words either (nothing to say, nothing said), and None otherwise (the views show "–" and say why;
jiwer itself would give the count of inserted words as the "rate"). Qt-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import jiwer

# The normalisation: jiwer's own transforms, in this order.
NORMALISE = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(),
                           jiwer.RemoveWhiteSpace(replace_by_space=True), jiwer.RemoveMultipleSpaces(), jiwer.Strip(),
                           jiwer.ReduceToListOfListOfWords()])


def normalise(text: str) -> list[str]:
    """The words compared: lower case, no punctuation, split on whitespace."""
    return NORMALISE(text)[0]


@dataclass(frozen=True)
class WordErrors:
    """The alignment of a reply against a reference, in normalised words."""

    reference_words: int
    reply_words: int
    substitutions: int
    deletions: int
    insertions: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def rate(self) -> float | None:
        """errors ÷ reference words; 0.0 for two empty texts, None for words against an empty reference."""
        if self.reference_words == 0:
            return 0.0 if self.reply_words == 0 else None
        return self.errors / self.reference_words

    def describe(self) -> str:
        """"3 errors in 20 words: 1 substituted, 1 deleted, 1 inserted" (or why there is no rate)."""
        if self.reference_words == 0:
            return ("the reference has no words, nor does the reply" if self.reply_words == 0 else
                    f"no rate: the reference has no words, the reply has {_count(self.reply_words, 'word')}")
        detail = ", ".join(f"{n} {what}" for n, what in ((self.substitutions, "substituted"),
                                                         (self.deletions, "deleted"),
                                                         (self.insertions, "inserted")) if n)
        head = f"{_count(self.errors, 'error')} in {_count(self.reference_words, 'word')}"
        return f"{head}: {detail}" if detail else head


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def word_errors(reference: str, reply: str) -> WordErrors:
    """The reply's word errors against the reference (both normalised as NORMALISE says)."""
    found = jiwer.process_words(reference, reply, reference_transform=NORMALISE, hypothesis_transform=NORMALISE)
    return WordErrors(len(found.references[0]), len(found.hypotheses[0]), found.substitutions, found.deletions,
                      found.insertions)


def shown(rate: float | None) -> str:
    """A rate as the views show it: "12.5 %" ("–" without one)."""
    return "–" if rate is None else f"{rate * 100:.1f} %"
