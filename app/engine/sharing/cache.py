"""Slots as a prompt cache: what each free slot's KV still holds, and which slot a new prompt should take.

A finished request leaves its KV in its slot. The record says which tokens those KV cells are (positions
0..n-1, nothing else) and, when the request's whole prompt was computed, the logits at its last prompt token: a
later request with exactly that prompt samples its first token from them and prefills nothing, with the same
bits as a cold run. Records exist only for free slots; a slot in use belongs to its sequence. No llama.cpp
here: the engine applies the choice (trim, copy) and keeps the records true.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A shared prefix shorter than this is prefilled rather than copied from another slot: a copy costs a few
# milliseconds (docs/engine.md, "Fan-out"), about what prefilling this many tokens costs on a small model.
MIN_SHARED_PREFIX = 16


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the longest common prefix of two token arrays."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    mismatch = np.flatnonzero(a[:n] != b[:n])
    return int(mismatch[0]) if len(mismatch) else n


@dataclass
class CacheRecord:
    tokens: np.ndarray  # the tokens at KV positions 0..len-1 of the slot
    prompt_len: int  # the prompt whose final logits are kept (0: none kept)
    logits: np.ndarray | None
    last_used: int
    adapters: tuple = ()  # the LoRA set its KV was computed with (GenerationRequest.lora_key): only that set reuses it
    kv_end: int | None = None  # the next position llama.cpp reports for it, when not len(tokens) (M-RoPE images)


@dataclass(frozen=True)
class Reuse:
    """Where a new prompt goes: `slot`, keeping its first `tokens` KV cells; `logits` when the whole prompt is
    cached (then nothing is prefilled and the first token is sampled from them)."""

    slot: int
    tokens: int
    logits: np.ndarray | None = None


class PromptCache:
    def __init__(self, n_slots: int):
        self._records: dict[int, CacheRecord] = {}
        self._clock = 0
        self.n_slots = n_slots

    def store(self, slot: int, tokens: np.ndarray, prompt_len: int, logits: np.ndarray | None,
              adapters: tuple = (), kv_end: int | None = None) -> None:
        """A sequence left `slot`: its KV holds `tokens`; `logits` are those after `tokens[:prompt_len]`."""
        self._clock += 1
        keep_logits = logits is not None and 0 < prompt_len <= len(tokens)
        self._records[slot] = CacheRecord(np.asarray(tokens, dtype=np.int32), prompt_len if keep_logits else 0,
                                          logits if keep_logits else None, self._clock, adapters,
                                          None if kv_end == len(tokens) else kv_end)

    def drop(self, slot: int) -> None:
        self._records.pop(slot, None)

    def clear(self) -> None:
        self._records.clear()

    def cached_end(self, slot: int) -> int:
        """The next KV position of a free slot's cached tokens, as llama.cpp reports it (0: nothing cached)."""
        record = self._records.get(slot)
        if record is None:
            return 0
        return len(record.tokens) if record.kv_end is None else record.kv_end

    def choose(self, free_slots: set[int], prompt: np.ndarray, adapters: tuple = ()) -> Reuse:
        """The free slot sharing the longest prefix with `prompt`, else the least recently used one (an empty
        slot first). Always leaves at least one prompt token to prefill, unless the cached logits cover it."""
        best, best_len = None, 0
        for slot in sorted(free_slots):
            record = self._records.get(slot)
            if record is not None and record.adapters == adapters:
                shared = common_prefix(record.tokens, prompt)
                if shared > best_len:
                    best, best_len = slot, shared
        if best is None:
            slot = min(free_slots, key=lambda s: (self._records[s].last_used if s in self._records else -1, s))
            return Reuse(slot, 0)
        record = self._records.pop(best)
        if best_len == len(prompt) == record.prompt_len:
            return Reuse(best, best_len, record.logits)
        return Reuse(best, min(best_len, len(prompt) - 1))

    def take(self, slot: int) -> None:
        """The slot now belongs to a sequence: its record is no longer the cache's to describe."""
        self._records.pop(slot, None)
