"""Reproducible mode's packing: several sequences' prompt pieces in one llama_decode, every token on the per-row
attention kernel (reproducible.py says why that kernel).

llama.cpp cuts a decode into ubatches with `split_equal` (llama-batch.cpp, `kv_unified=False`): a ubatch takes
the run of consecutive sequence ids that still have tokens, starting at the lowest, and the same number of
tokens from each (the fewest any of them has left). `ubatches` models that cut.
"""

from __future__ import annotations


def ubatches(runs: list[tuple[int, int]], n_ubatch: int | None = None) -> list[list[tuple[int, int]]]:
    """How llama.cpp cuts a decode of (slot, tokens) runs (one run per slot) into ubatches: a list of
    [(slot, tokens in this ubatch), ...] per ubatch, in order."""
    left = dict(sorted((slot, n) for slot, n in runs if n > 0))
    cut = []
    while left:
        first = min(left)
        streams = [first]
        while streams[-1] + 1 in left:
            streams.append(streams[-1] + 1)
        take = min(left[s] for s in streams)
        if n_ubatch is not None:
            take = min(take, max(1, n_ubatch // len(streams)))
        cut.append([(s, take) for s in streams])
        for s in streams:
            left[s] -= take
            if not left[s]:
                del left[s]
    return cut
