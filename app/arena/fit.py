"""Bradley–Terry strengths from pair counts, and their Bayesian-bootstrap distribution.

The model: P(i beats j) = 1 / (1 + exp(-(θi - θj))). A tie or "both bad" counts half a win each way, as
FastChat's `compute_mle_elo`/`fit_bt` count it (its loss with outcome 0.5). The fit minimises, over aggregated
counts, the negative log-likelihood plus PENALTY · Σθ²: a Gaussian prior with standard deviation PRIOR_SD on
each strength (choix's `alpha`), so one-sided pairs (one variant always wins) stay finite. The optimiser is
scipy's L-BFGS-B; all bootstrap rounds are one separable problem, solved in one call.

Scores use FastChat's Elo-like scale: SCALE · θ with SCALE = 400 / ln 10 (a 400-point gap = 10:1 odds), the
mean of each comparison group anchored at ANCHOR = 1000.

Every pair that has votes also gets ½ a win each way (Haldane–Anscombe's correction of a log-odds with an
empty cell), so a 10–0 pair is fitted as 10½–½ rather than as a sure thing.

The bootstrap is Rubin's Bayesian bootstrap, stratified by pair: each round keeps every pair's votes (plus the
½ + ½) and draws the shares of its outcomes (i won, tie, j won) from a Dirichlet over the observed counts with
that ½ in each win cell, whose mean is the point fit's data. An ordinary bootstrap of a one-sided pair repeats
the same counts in every round and reports a zero-width interval; this one does not. On a one-sided pair the
far end of the interval is set by the prior, not by the votes.

Both corrections differ from FastChat's plain maximum likelihood by less than the interval once a pair has a
few dozen votes.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import ThreadpoolController

from app.arena.tally import Tally

SCALE = 400 / math.log(10)
ANCHOR = 1000.0
PRIOR_SD = math.log(10)  # one standard deviation of the prior = 400 points on the score scale
PENALTY = 1 / (2 * PRIOR_SD**2)
HALF = 0.5  # the pseudo-win each way per voted pair, and the Dirichlet's prior on each win cell
GTOL = 1e-7  # largest gradient component (in votes) at convergence


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def _incidence(pairs: np.ndarray, n: int) -> np.ndarray:
    m = np.zeros((len(pairs), n))
    m[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    m[np.arange(len(pairs)), pairs[:, 1]] = -1.0
    return m


def fit_strengths(pairs: np.ndarray, n: int, won: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Penalised maximum-likelihood strengths. `won`/`total` are (rounds, pairs): i's wins (ties as halves) and
    the votes of each pair in each round. Returns (rounds, n) strengths, each round fitted independently."""
    won, total = np.atleast_2d(won).astype(float), np.atleast_2d(total).astype(float)
    rounds = won.shape[0]
    incidence = _incidence(pairs, n)
    lost = total - won

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta = x.reshape(rounds, n)
        d = theta @ incidence.T
        loss = (won * np.logaddexp(0.0, -d) + lost * np.logaddexp(0.0, d)).sum() + PENALTY * (theta**2).sum()
        grad = (total * expit(d) - won) @ incidence + 2 * PENALTY * theta
        return float(loss), grad.ravel()

    # L-BFGS-B's BLAS calls are tiny: OpenBLAS threads only spin (50x slower on a busy 2-core machine).
    with _blas().limit(limits=1, user_api="blas"):
        result = minimize(objective, np.zeros(rounds * n), jac=True, method="L-BFGS-B",
                          options={"maxiter": 20_000, "maxfun": 40_000, "ftol": 0.0, "gtol": GTOL})
    theta = result.x.reshape(rounds, n)
    if not result.success and np.abs(objective(result.x)[1]).max() > 1e-3:
        raise RuntimeError(f"the Bradley–Terry fit did not converge: {result.message}")
    return theta


def to_scores(theta: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Strengths → scores: SCALE · θ with each group's mean at ANCHOR (per round when theta is 2-D)."""
    scores = SCALE * np.array(theta, dtype=float, copy=True)
    for g in np.unique(groups):
        members = groups == g
        scores[..., members] -= scores[..., members].mean(axis=-1, keepdims=True)
    return scores + ANCHOR


def point_scores(t: Tally, groups: np.ndarray) -> np.ndarray:
    """The scores fitted on the votes as they are."""
    if not len(t.pairs):
        return np.full(t.n, ANCHOR)
    return to_scores(fit_strengths(t.pairs, t.n, t.score_i + HALF, t.totals + 2 * HALF)[0], groups)


def bootstrap_scores(t: Tally, groups: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """(rounds, n) scores, one fit per Bayesian-bootstrap round (see the module docstring). Seeded."""
    if not len(t.pairs):
        return np.full((rounds, t.n), ANCHOR)
    rng = np.random.default_rng(seed)
    concentration = np.stack([t.wins_i + HALF, t.ties + t.both_bad, t.wins_j + HALF], axis=-1)
    draws = rng.gamma(np.broadcast_to(concentration, (rounds, *concentration.shape)))
    shares = draws / draws.sum(axis=-1, keepdims=True)
    total = np.broadcast_to(t.totals + 2 * HALF, (rounds, len(t.pairs)))
    won = total * (shares[..., 0] + 0.5 * shares[..., 1])
    return to_scores(fit_strengths(t.pairs, t.n, won, total), groups)
