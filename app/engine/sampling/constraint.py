"""What a constrained request may generate next: a GBNF grammar (llama.cpp's own matcher) or a JSON schema
(llguidance), behind one interface the sampler asks about a few candidate tokens at a time.

`allowed(ids)` answers for the ids given, in their order, without changing any state; `accept(token)` moves past
a token that was allowed. An end-of-generation token is allowed exactly when the text so far is complete (llama.cpp's
rule: any end-of-generation token, not only the one llguidance calls EOS) and is never accepted: the request ends.
"""

from __future__ import annotations

import ctypes
from typing import Protocol

import llama_cpp
import numpy as np

# llama_token_data {int32 id; float logit; float p}: a numpy record array with the same layout.
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
assert TOKEN_DATA.itemsize == ctypes.sizeof(llama_cpp.llama_token_data)
_DATA_P = ctypes.POINTER(llama_cpp.llama_token_data)


def token_array(records: np.ndarray, is_sorted: bool = False) -> llama_cpp.llama_token_data_array:
    """A llama_token_data_array over a TOKEN_DATA record array (which must outlive it)."""
    return llama_cpp.llama_token_data_array(data=records.ctypes.data_as(_DATA_P), size=len(records), selected=-1,
                                            sorted=is_sorted)


class Constraint(Protocol):
    end_token: int  # an end-of-generation token: what a sequence gets when nothing at all is allowed

    def allowed(self, ids: np.ndarray) -> np.ndarray: ...  # one bool per id, same order

    def accept(self, token: int) -> None: ...

    def free(self) -> None: ...


class GrammarConstraint:
    """A GBNF grammar through llama.cpp's grammar sampler, asked about a sub-array of candidates at a time (its
    cost is per candidate: the whole vocabulary costs milliseconds, a handful microseconds)."""

    def __init__(self, sampler, eog_ids):
        self.ptr = sampler  # owned: freed by free()
        self._eog = frozenset(eog_ids)
        self.end_token = min(eog_ids, default=0)  # what ends the text when nothing at all is allowed
        self._records = np.zeros(64, TOKEN_DATA)

    def allowed(self, ids: np.ndarray) -> np.ndarray:
        n = len(ids)
        if len(self._records) < n:
            self._records = np.zeros(max(n, 2 * len(self._records)), TOKEN_DATA)
        records = self._records[:n]
        records["id"] = ids
        records["logit"] = 0.0
        llama_cpp.llama_sampler_apply(self.ptr, ctypes.byref(token_array(records)))
        return records["logit"] == 0.0  # a rejected candidate's logit became -inf

    def accept(self, token: int) -> None:
        if token not in self._eog:
            llama_cpp.llama_sampler_accept(self.ptr, token)

    def free(self) -> None:
        if self.ptr:
            llama_cpp.llama_sampler_free(self.ptr)
            self.ptr = None


class SchemaConstraint:
    """A JSON schema through an llguidance matcher. Its token mask for the current position is computed once
    (in `mask`, or by the engine for a whole step at once, `MaskBatch`) and read by `allowed`; a single token is
    checked without a mask (`validate_tokens`), which is what a greedy step mostly needs."""

    FEW = 4  # up to this many ids are checked one by one; more compute the whole mask

    def __init__(self, matcher, eog_ids, n_vocab: int):
        self.matcher = matcher
        self._eog = np.asarray(eog_ids, dtype=np.int64)
        self._eog_set = frozenset(eog_ids)
        self.end_token = min(eog_ids, default=0)
        self.n_words = (n_vocab + 31) // 32
        self.mask: np.ndarray | None = None  # int32 words, bit i = token i allowed; None until computed

    def compute_mask(self) -> np.ndarray:
        if self.mask is None:
            words = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.int32)
            self.set_mask(words)
        return self.mask

    def set_mask(self, words: np.ndarray) -> None:
        """Take a mask computed for the current position (copied: the caller may reuse its buffer)."""
        mask = np.array(words[:self.n_words], dtype=np.int32)
        eog_words, eog_bits = self._eog >> 5, (self._eog & 31).astype(np.int32)
        if self.matcher.is_accepting():  # llama.cpp's rule: every end-of-generation token, or none
            np.bitwise_or.at(mask, eog_words, np.left_shift(1, eog_bits, dtype=np.int32))
        else:
            np.bitwise_and.at(mask, eog_words, ~np.left_shift(1, eog_bits, dtype=np.int32))
        self.mask = mask

    def allowed(self, ids: np.ndarray) -> np.ndarray:
        if self.mask is None and len(ids) <= self.FEW:
            return np.array([self._one(int(t)) for t in ids], dtype=bool)
        mask = self.compute_mask()
        ids = np.asarray(ids, dtype=np.int64)
        return ((mask[ids >> 5] >> (ids & 31).astype(np.int32)) & 1).astype(bool)

    def _one(self, token: int) -> bool:
        if token in self._eog_set:
            return self.matcher.is_accepting()
        return self.matcher.validate_tokens([token]) == 1

    def accept(self, token: int) -> None:
        if token in self._eog_set:
            return
        if not self.matcher.consume_token(token):
            raise RuntimeError(f"the JSON schema matcher refused token {token}: {self.matcher.get_error()}")
        self.mask = None

    def free(self) -> None:
        self.matcher = None
