"""Log-probabilities of generated tokens, as llama-server reports them by default.

From the model's raw distribution at that output: a softmax over the whole vocabulary of the logits, before
temperature, penalties or any other sampler. `top` holds the K most likely tokens, most likely first; the
sampled token gets its own logprob whether or not it is among them. Only requests that ask pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TokenLogprob:
    token_id: int
    text: str  # the token's piece (bytes that end inside a UTF-8 character show as U+FFFD)
    logprob: float  # natural log, <= 0
    top: tuple[tuple[int, str, float], ...]  # (token_id, text, logprob), most likely first

    @property
    def probability(self) -> float:
        return float(np.exp(self.logprob))

    def to_dict(self) -> dict:
        return {"token_id": self.token_id, "text": self.text, "logprob": self.logprob,
                "top": [list(entry) for entry in self.top]}

    @classmethod
    def from_dict(cls, data: dict) -> TokenLogprob:
        return cls(int(data["token_id"]), str(data["text"]), float(data["logprob"]),
                   tuple((int(t), str(x), float(lp)) for t, x, lp in data.get("top", ())))


def top_k_ids(row: np.ndarray, k: int) -> np.ndarray:
    """Ids of the k largest logits, largest first. Exact: only tokens within `margin` of the maximum can be
    among them once at least k are, so the sort runs over those few instead of the whole vocabulary (a full
    argpartition of 49k logits cost ~0.5 ms a token, measured)."""
    peak, margin = row.max(), 4.0
    while True:
        candidates = np.flatnonzero(row >= peak - margin)
        if len(candidates) >= k or len(candidates) == len(row):
            break
        margin *= 2
    if len(candidates) > k:
        candidates = candidates[np.argpartition(row[candidates], -k)[-k:]]
    return candidates[np.argsort(-row[candidates], kind="stable")]


def token_logprob(logits: np.ndarray, token: int, k: int, text_of: Callable[[int], str]) -> TokenLogprob:
    """`logits` is one output row (a view is fine: nothing is kept); `text_of(token_id)` gives a piece."""
    peak = float(logits.max())
    log_total = peak + float(np.log(np.exp(logits - peak).sum(dtype=np.float64)))
    top: tuple[tuple[int, str, float], ...] = ()
    if k > 0:
        top = tuple((int(t), text_of(int(t)), float(logits[t]) - log_total) for t in top_k_ids(logits, k))
    return TokenLogprob(int(token), text_of(int(token)), float(logits[token]) - log_total, top)
