"""Votes aggregated into counts per unordered pair of variants: what the fit, the bootstrap and every table read.

Variants are indexed in sorted key order and each pair (i, j) has i < j, so the tally (and everything computed
from it) does not depend on the order of the votes or on which side each output was shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from app.session.votes import Vote


@dataclass(frozen=True)
class Tally:
    """Counts over `pairs` (P x 2 variant indices, i < j). `wins_i`/`wins_j` are the votes each side won,
    `ties` the "tie" votes, `both_bad` the "both bad" votes; a vote of either kind counts half a win each way."""

    keys: tuple[str, ...]
    labels: tuple[str, ...]
    pairs: np.ndarray
    wins_i: np.ndarray
    wins_j: np.ndarray
    ties: np.ndarray
    both_bad: np.ndarray

    @property
    def n(self) -> int:
        return len(self.keys)

    @property
    def totals(self) -> np.ndarray:
        return self.wins_i + self.wins_j + self.ties + self.both_bad

    @property
    def score_i(self) -> np.ndarray:
        """Wins of variant i in each pair, with a tie or "both bad" as half a win."""
        return self.wins_i + 0.5 * (self.ties + self.both_bad)

    def index(self, key: str) -> int:
        return self.keys.index(key)

    def pair_index(self, i: int, j: int) -> int | None:
        """Row of the pair (i, j) in `pairs`, either order; None when the pair has no votes."""
        lo, hi = min(i, j), max(i, j)
        rows = np.flatnonzero((self.pairs[:, 0] == lo) & (self.pairs[:, 1] == hi))
        return int(rows[0]) if len(rows) else None

    def per_variant(self, counts_i: np.ndarray, counts_j: np.ndarray) -> np.ndarray:
        """Sum a per-pair count onto the variants: counts_i to each pair's i, counts_j to its j."""
        out = np.zeros(self.n)
        np.add.at(out, self.pairs[:, 0], counts_i)
        np.add.at(out, self.pairs[:, 1], counts_j)
        return out

    def groups(self) -> np.ndarray:
        """Connected components of the comparison graph: scores compare only within a group. A variant with no
        votes is a group of its own."""
        graph = coo_matrix((np.ones(len(self.pairs)), (self.pairs[:, 0], self.pairs[:, 1])), shape=(self.n,) * 2)
        return connected_components(graph, directed=False)[1]


def tally(votes: Iterable[Vote], variants: Sequence[str] = (), labels: dict[str, str] | None = None) -> Tally:
    """Count `votes`; `variants` adds keys that may have no votes. A variant's label is the newest non-empty
    one its votes carry, unless `labels` names it."""
    votes = sorted(votes, key=lambda v: (v.time, v.id))
    names: dict[str, str] = {k: "" for k in variants}
    for v in votes:
        for key, label in ((v.a, v.a_label), (v.b, v.b_label)):
            if label or key not in names:
                names[key] = label or names.get(key, "")
    names.update(labels or {})
    keys = tuple(sorted(names))
    where = {k: i for i, k in enumerate(keys)}
    cells: dict[tuple[int, int], list[int]] = {}
    for v in votes:
        i, j = sorted((where[v.a], where[v.b]))
        cell = cells.setdefault((i, j), [0, 0, 0, 0])
        winner = v.winner_key
        column = 2 if v.winner == "tie" else 3 if v.winner == "both_bad" else 0 if where[winner] == i else 1
        cell[column] += 1
    order = sorted(cells)
    counts = np.array([cells[p] for p in order], dtype=float).reshape(-1, 4)
    return Tally(keys, tuple(names[k] or k for k in keys), np.array(order, dtype=int).reshape(-1, 2),
                 counts[:, 0], counts[:, 1], counts[:, 2], counts[:, 3])
