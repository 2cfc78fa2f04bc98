"""Which two variants (and which case) to show next: the pair whose order is least certain and that has the
fewest votes, not a uniform random pick.

The rule, for every unordered pair {x, y} of the variants in play:
- p = the share of bootstrap rounds in which x scores above y (0.5 when either has no votes, or when no chain
  of votes links them); uncertainty u = 1 − |2p − 1|: 1 when the data cannot tell, 0 when every round agrees;
- n = the votes the pair already has;
- priority = u / √(1 + n): an interval narrows like 1/√n, so a pair's next vote is worth less the more it has.
The pair with the highest priority is shown; ties go to the pair with fewer votes, then to a seeded draw. Pairs
in `skip` (one side could not be voted on: it failed or wrote nothing) come only after every other pair, since the
votes, which alone decide the draw, do not change when a pair is skipped.
The sides are drawn at random (blindness: neither position says which variant it is), and the case is the one
this pair has the fewest votes on (ties: a seeded draw). Deterministic: the same variants, votes and seed
always give the same matchup; the draw also depends on the number of votes, so sides change between votes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from app.arena.board import ARENA_SEED, Board, board
from app.session.votes import Vote


@dataclass(frozen=True)
class Matchup:
    """The next pair: show `a` first (left) and `b` second, on `case` (None when no cases were given)."""

    a: str
    b: str
    case: str | None
    priority: float
    uncertainty: float
    votes: int


@dataclass(frozen=True)
class PairPriority:
    x: str
    y: str
    priority: float
    uncertainty: float
    votes: int


def priorities(variants: Sequence[str], votes: Sequence[Vote], the_board: Board | None = None,
               seed: int = ARENA_SEED) -> list[PairPriority]:
    """Every pair of `variants` with its priority, highest first (ties: fewer votes first, then by keys)."""
    keys = sorted(set(variants))
    if len(keys) < 2:
        raise ValueError("an arena needs at least two variants")
    if the_board is None:
        the_board = board(votes, variants=keys, seed=seed)
    known = set(the_board.keys)
    out = []
    for i, x in enumerate(keys):
        for y in keys[i + 1:]:
            if x in known and y in known:
                stat = the_board.pair(x, y)
                p, n = stat.p_above, stat.votes
            else:
                p, n = 0.5, 0
            u = 1 - abs(2 * p - 1)
            out.append(PairPriority(x, y, u / math.sqrt(1 + n), u, n))
    return sorted(out, key=lambda q: (-q.priority, q.votes, q.x, q.y))


def next_pair(variants: Sequence[str], votes: Sequence[Vote], *, cases: Sequence[str] = (),
              seed: int = ARENA_SEED, the_board: Board | None = None,
              skip: Collection[frozenset[str]] = ()) -> Matchup:
    """The most informative next matchup (see the module docstring). `the_board`, when given, must be the
    board of these votes; it saves recomputing it. `skip`: pairs ({x, y}) to draw only when no other is left."""
    votes = list(votes)
    ranked = priorities(variants, votes, the_board, seed)
    ranked = [q for q in ranked if frozenset((q.x, q.y)) not in skip] or ranked
    rng = np.random.default_rng([seed, len(votes)])
    best = [q for q in ranked if math.isclose(q.priority, ranked[0].priority, rel_tol=1e-9, abs_tol=1e-12)
            and q.votes == ranked[0].votes]
    pick = best[int(rng.integers(len(best)))]
    a, b = (pick.x, pick.y) if rng.random() < 0.5 else (pick.y, pick.x)
    case = None
    if cases:
        seen = Counter(v.case for v in votes if v.pair == (pick.x, pick.y))
        fewest = min(seen[c] for c in cases)
        candidates = [c for c in cases if seen[c] == fewest]
        case = candidates[int(rng.integers(len(candidates)))]
    return Matchup(a, b, case, pick.priority, pick.uncertainty, pick.votes)
