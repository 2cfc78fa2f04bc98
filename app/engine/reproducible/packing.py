"""Reproducible mode's packing: several sequences' prompt pieces in one llama_decode, every token on the per-row
attention kernel (reproducible.py says why that kernel).

llama.cpp cuts a decode into ubatches with `split_equal` (llama-batch.cpp, `kv_unified=False`): a ubatch takes
the run of consecutive sequence ids that still have tokens, starting at the lowest, and the same number of
tokens from each (the fewest any of them has left). `ubatches` models that cut. Pieces of unequal length
therefore share ubatches only in part, and a piece's last token may end up alone in a ubatch (one token of one
stream: with 512 or more KV cells, the split-KV kernel, other bits). So pieces are packed only where the cut
leaves no token alone and takes fewer passes than the pieces would alone (each of those costs a pass of its
own: on a compute-bound CPU a piece costs its tokens plus ~4-6 ms, so only the pass is saved).

Invariants of `pack_pieces`: every piece is in exactly one group; a group holds at most one piece of a sequence
and at most `n_batch` tokens; a sequence's pieces are in increasing groups; a group of two or more pieces is
`safe_to_pack`. No llama.cpp here (scripts/probes/2026-11-26-packing.py checks the model against llama.cpp's bits).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


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


def has_lone_token(cut: list[list[tuple[int, int]]]) -> bool:
    """Whether some ubatch is one token of one stream (the split-KV kernel's shape once its KV reaches 512)."""
    return any(len(ubatch) == 1 and ubatch[0][1] == 1 for ubatch in cut)


def safe_to_pack(runs: list[tuple[int, int]]) -> bool:
    """Whether (slot, tokens) runs, each under 64 tokens, may share one llama_decode: no lone token in its cut,
    and fewer ubatches than runs (each run alone is one pass; a cut into as many passes saves nothing, and
    measured slower: docs/engine.md, "Packing")."""
    cut = ubatches(runs)
    return len(runs) > 1 and len(cut) < len(runs) and not has_lone_token(cut)


def pack_pieces(pieces: list[tuple[T, int]], slot_of: Callable[[T], int], n_batch: int) -> list[list[tuple[T, int]]]:
    """Group a step's prompt pieces (plan order: a sequence's pieces in prompt order) into llama_decodes. A piece
    joins the first group after the one holding its sequence's previous piece where the group stays within
    `n_batch` tokens and `safe_to_pack`; else it starts a group of its own. Groups run in order, so a sequence's
    pieces still follow each other, and a group of one piece is decoded as before."""
    groups: list[list[tuple[T, int]]] = []
    after: dict[int, int] = {}  # id(sequence) -> index of the group holding its latest piece
    for seq, n in pieces:
        placed = False
        for i in range(after.get(id(seq), -1) + 1, len(groups)):
            group = groups[i]
            if sum(k for _, k in group) + n > n_batch:
                continue
            if safe_to_pack([(slot_of(s), k) for s, k in group] + [(slot_of(seq), n)]):
                group.append((seq, n))
                after[id(seq)] = i
                placed = True
                break
        if not placed:
            groups.append([(seq, n)])
            after[id(seq)] = len(groups) - 1
    return groups

