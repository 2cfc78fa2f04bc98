"""The leaderboard: Bradley–Terry scores with bootstrap 95 % intervals, ranks that admit ties, the pairs the
data cannot separate, and the win-rate matrix.

- Scores, intervals and ranks are computed within a group: variants linked by votes, directly or through
  others. Two variants in different groups were never compared, even indirectly: they "cannot separate".
- A variant with no votes gets the anchor score (1000) and an infinite interval, and ranks anywhere.
- Two variants cannot be separated when their intervals overlap (or they are in different groups). A rank is
  a range: `rank` = 1 + the variants whose interval lies wholly above this one (FastChat's rule, so
  inseparable variants share a rank), `rank_worst` = the variants count minus those wholly below.
- An interval always contains its score (the bootstrap's percentiles are widened to it when needed).
- Everything is a function of the multiset of votes: the order of votes, and the side each output was shown
  on, change nothing. Same votes and seed, same board.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from app.arena import fit
from app.arena.sources import SourceSummary, summarize_sources
from app.arena.tally import Tally, tally
from app.engine import limits
from app.session.votes import Vote

BOOTSTRAP_ROUNDS = limits.Limit(20, 10000, 200)  # bootstrap rounds behind the 95 % intervals
ARENA_SEED = 0  # their seed (and the next pair's): same votes and seed, same board

@dataclass(frozen=True)
class Standing:
    """One variant's row. ci_low/ci_high are ±inf when the votes cannot bound the score."""

    variant: str
    label: str
    score: float
    ci_low: float
    ci_high: float
    rank: int
    rank_worst: int
    votes: int
    wins: int
    ties: int
    losses: int
    both_bad: int
    group: int

    @property
    def rank_text(self) -> str:
        return str(self.rank) if self.rank == self.rank_worst else f"{self.rank}–{self.rank_worst}"


@dataclass(frozen=True)
class PairStat:
    """Two variants (a < b by key): votes between them, a's win rate over b (ties as half; None without votes),
    P(a ranks above b) over bootstrap rounds, the score difference a − b with its 95 % interval, and whether
    the data can order them."""

    a: str
    b: str
    votes: int
    win_rate: float | None
    p_above: float
    diff: float
    diff_low: float
    diff_high: float
    cannot_separate: bool


@dataclass(frozen=True)
class Board:
    standings: list[Standing]  # best first
    pairs: dict[tuple[str, str], PairStat]
    sources: SourceSummary
    rounds: int
    seed: int
    samples: np.ndarray = field(repr=False)  # (rounds, variants) bootstrap scores, columns in `keys` order
    keys: tuple[str, ...] = ()

    def standing(self, key: str) -> Standing:
        return next(s for s in self.standings if s.variant == key)

    def pair(self, x: str, y: str) -> PairStat:
        """The pair's figures as seen from x (a = x), whichever order it is stored in."""
        stat = self.pairs[(x, y) if x < y else (y, x)]
        if stat.a == x:
            return stat
        return PairStat(x, y, stat.votes, None if stat.win_rate is None else 1 - stat.win_rate, 1 - stat.p_above,
                        -stat.diff, -stat.diff_high, -stat.diff_low, stat.cannot_separate)

    def cannot_separate(self, x: str, y: str) -> bool:
        return self.pair(x, y).cannot_separate

    def win_rates(self) -> list[list[float | None]]:
        """Row variant's win rate over the column variant, in standings order (None: no votes, or itself)."""
        order = [s.variant for s in self.standings]
        return [[None if x == y else self.pair(x, y).win_rate for y in order] for x in order]


def board(votes: Iterable[Vote], *, variants: Sequence[str] = (), labels: dict[str, str] | None = None,
          source: str | None = None, rounds: int = BOOTSTRAP_ROUNDS.default,
          seed: int = ARENA_SEED) -> Board:
    """The full leaderboard of `votes` (only those of `source`, "human" or "judge", when given). `variants`
    lists keys to show even without votes; `labels` names variants (default: the labels the votes carry)."""
    BOOTSTRAP_ROUNDS.check("rounds", rounds)
    votes = list(votes)
    summary = summarize_sources(votes)
    if source is not None:
        votes = [v for v in votes if v.source == source]
    t = tally(votes, variants, labels)
    groups = t.groups()
    point = fit.point_scores(t, groups)
    samples = fit.bootstrap_scores(t, groups, rounds, seed)
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    played = t.per_variant(t.totals, t.totals)
    low[played == 0], high[played == 0] = -math.inf, math.inf
    low, high = np.minimum(low, point), np.maximum(high, point)
    standings = _standings(t, groups, point, low, high)
    return Board(standings, _pairs(t, groups, point, samples, low, high), summary, rounds, seed, samples, t.keys)


def leaderboard(votes: Iterable[Vote], **kwargs) -> list[Standing]:
    """Standings, best first (see `board` for the arguments)."""
    return board(votes, **kwargs).standings


def display_names(standings: Sequence[Standing]) -> dict[str, str]:
    """A variant's name for tables: its label, with the key added when labels repeat or there is none."""
    counts: dict[str, int] = {}
    for s in standings:
        counts[s.label] = counts.get(s.label, 0) + 1
    return {s.variant: s.label if s.label != s.variant and counts[s.label] == 1 else
            (s.variant if s.label == s.variant else f"{s.label} ({s.variant[:8]})") for s in standings}


def _overlap(low: np.ndarray, high: np.ndarray, groups: np.ndarray, i: int, j: int) -> bool:
    return groups[i] != groups[j] or (low[i] <= high[j] and low[j] <= high[i])


def _standings(t: Tally, groups, point, low, high) -> list[Standing]:
    wins = t.per_variant(t.wins_i, t.wins_j)
    losses = t.per_variant(t.wins_j, t.wins_i)
    ties = t.per_variant(t.ties, t.ties)
    both_bad = t.per_variant(t.both_bad, t.both_bad)
    rows = []
    for i, key in enumerate(t.keys):
        others = [j for j in range(t.n) if j != i]
        above = sum(not _overlap(low, high, groups, i, j) and low[j] > high[i] for j in others)
        below = sum(not _overlap(low, high, groups, i, j) and high[j] < low[i] for j in others)
        rows.append(Standing(key, t.labels[i], float(point[i]), float(low[i]), float(high[i]), int(1 + above),
                             int(t.n - below), int(wins[i] + losses[i] + ties[i] + both_bad[i]), int(wins[i]),
                             int(ties[i]), int(losses[i]), int(both_bad[i]), int(groups[i])))
    return sorted(rows, key=lambda s: (-s.score, s.rank, s.variant))


def _pairs(t: Tally, groups, point, samples, low, high) -> dict[tuple[str, str], PairStat]:
    out = {}
    for i in range(t.n):
        for j in range(i + 1, t.n):
            row = t.pair_index(i, j)
            votes = 0 if row is None else int(t.totals[row])
            rate = None if row is None else float(t.score_i[row] / t.totals[row])
            separate = not _overlap(low, high, groups, i, j)
            if groups[i] != groups[j]:
                p_above, d_low, d_high = 0.5, -math.inf, math.inf
            else:
                d = samples[:, i] - samples[:, j]
                p_above = float(np.mean(d > 0) + 0.5 * np.mean(d == 0))
                d_low, d_high = (float(x) for x in np.percentile(d, [2.5, 97.5]))
                d_low, d_high = min(d_low, point[i] - point[j]), max(d_high, point[i] - point[j])
            out[(t.keys[i], t.keys[j])] = PairStat(t.keys[i], t.keys[j], votes, rate, p_above,
                                                   float(point[i] - point[j]), d_low, d_high, not separate)
    return out
