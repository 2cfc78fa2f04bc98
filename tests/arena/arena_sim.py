"""Synthetic arena votes from known Bradley–Terry strengths (natural log-odds units), shared by the arena tests."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np

from app.arena import Vote

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)


def keys_for(n: int) -> list[str]:
    return [f"v{i}" for i in range(n)]


def simulate(strengths, votes_per_pair: int, seed: int, tie_rate: float = 0.0, both_bad_rate: float = 0.0,
             source: str = "human") -> list[Vote]:
    """Every pair gets `votes_per_pair` votes; i beats j with probability 1 / (1 + exp(-(s_i - s_j))), after a
    tie / both-bad draw with the given rates. Sides shown are random; ids and times are deterministic."""
    rng = np.random.default_rng(seed)
    keys = keys_for(len(strengths))
    votes = []
    for i, j in itertools.combinations(range(len(strengths)), 2):
        p = 1 / (1 + np.exp(-(strengths[i] - strengths[j])))
        for k in range(votes_per_pair):
            i_first = rng.random() < 0.5
            a, b = (keys[i], keys[j]) if i_first else (keys[j], keys[i])
            r = rng.random()
            if r < tie_rate:
                winner = "tie"
            elif r < tie_rate + both_bad_rate:
                winner = "both_bad"
            else:
                winner = "a" if (rng.random() < p) == i_first else "b"
            votes.append(Vote(a, b, winner, id=f"s{seed}-{i}-{j}-{k}-{source}", source=source,
                              judge="judge-x" if source == "judge" else "", case_id=f"case{k % 5}",
                              time=T0 + dt.timedelta(seconds=len(votes))))
    return votes
