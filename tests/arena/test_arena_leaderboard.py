"""The arena leaderboard on synthetic votes with known strengths: order, interval coverage, degenerate data,
the cannot-separate flag, win rates, human/judge agreement, and invariance to vote order and sides."""

import itertools
import math
import time

import choix
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.arena import ANCHOR, SCALE, Vote, board, leaderboard
from app.arena.fit import PENALTY, fit_strengths
from tests.fixtures.arena_sim import keys_for, simulate

COVERAGE_SIMULATIONS = 200
ROUNDS = 200


def test_fit_recovers_the_order_of_known_strengths():
    strengths = [-1.2, -0.4, 0.4, 1.2]
    for seed in range(10):
        standings = leaderboard(simulate(strengths, 40, seed), seed=seed)
        assert [s.variant for s in standings] == keys_for(4)[::-1], seed
        assert standings[0].rank == 1 and standings[-1].rank_worst == 4
        # FastChat's scale: mean at 1000, 400/ln 10 points per unit of strength
        assert np.mean([s.score for s in standings]) == pytest.approx(ANCHOR)
        spread = standings[0].score - standings[-1].score
        assert 0.6 * SCALE * 2.4 < spread < 1.4 * SCALE * 2.4


def test_difference_intervals_cover_the_true_differences_88_to_99_percent():
    """~200 seeded simulations x 6 pairs, 200 bootstrap rounds each; prints the coverage and the time."""
    strengths = [-0.6, -0.2, 0.2, 0.6]
    keys = keys_for(4)
    covered = checked = wrong_order = separated = 0
    started = time.perf_counter()
    for seed in range(COVERAGE_SIMULATIONS):
        b = board(simulate(strengths, 30, 1000 + seed), rounds=ROUNDS, seed=seed)
        for i, j in itertools.combinations(range(4), 2):
            stat = b.pair(keys[i], keys[j])
            truth = SCALE * (strengths[i] - strengths[j])
            covered += stat.diff_low <= truth <= stat.diff_high
            checked += 1
            if not stat.cannot_separate:
                separated += 1
                wrong_order += stat.diff > 0  # i is truly weaker than j
    elapsed = time.perf_counter() - started
    coverage = covered / checked
    print(f"\ncoverage of the 95% difference intervals: {coverage:.3f} over {checked} differences "
          f"({COVERAGE_SIMULATIONS} simulations x {ROUNDS} rounds) in {elapsed:.1f} s; "
          f"{separated} pairs separated, {wrong_order} in the wrong order")
    assert 0.88 <= coverage <= 0.99
    assert separated > 0 and wrong_order <= 0.01 * separated


def test_matches_choix_on_the_same_penalised_likelihood():
    """The fit is the penalised MLE choix computes (no ties: the losses are identical)."""
    votes = simulate([-0.5, 0.0, 0.3, 1.0], 12, seed=5)
    keys = keys_for(4)
    data = [(keys.index(v.winner_key), keys.index(v.b if v.winner == "a" else v.a)) for v in votes]
    pairs = np.array(list(itertools.combinations(range(4), 2)))
    won = np.array([sum(w == i and lo == j for w, lo in data) for i, j in pairs], dtype=float)
    total = np.array([sum({w, lo} == {i, j} for w, lo in data) for i, j in pairs], dtype=float)
    ours = fit_strengths(pairs, 4, won, total)[0]
    theirs = choix.opt_pairwise(4, data, alpha=PENALTY)
    assert np.allclose(ours - ours.mean(), theirs - theirs.mean(), atol=1e-4)


def test_ties_one_sided_pairs_and_a_variant_without_votes_give_finite_scores_and_wide_intervals():
    votes = [Vote("x", "y", "a") for _ in range(12)]  # x always beats y
    votes += [Vote("y", "z", "tie") for _ in range(6)] + [Vote("z", "y", "both_bad") for _ in range(3)]
    b = board(votes, variants=["lonely"])
    by_key = {s.variant: s for s in b.standings}
    for s in b.standings:
        assert math.isfinite(s.score)
        assert s.ci_low <= s.score <= s.ci_high
    assert by_key["lonely"].score == ANCHOR and by_key["lonely"].votes == 0
    assert by_key["lonely"].ci_low == -math.inf and by_key["lonely"].ci_high == math.inf
    assert (by_key["lonely"].rank, by_key["lonely"].rank_worst) == (1, 4)
    one_sided = b.pair("x", "y")
    assert one_sided.win_rate == 1.0 and one_sided.diff > 0
    assert one_sided.diff_high - one_sided.diff_low > 100  # the votes do not bound how much better x is
    assert b.pair("y", "z").win_rate == 0.5 and b.cannot_separate("y", "z")
    assert by_key["y"].ties == 6 and by_key["y"].both_bad == 3 and by_key["z"].both_bad == 3
    assert b.cannot_separate("x", "lonely") and b.pair("x", "lonely").votes == 0
    assert leaderboard([Vote("p", "q", "b")])[0].variant == "q"  # a single vote: finite, no exception
    assert leaderboard([]) == []


def test_cannot_separate_appears_exactly_when_intervals_overlap():
    strengths = [0.0, 0.05, 2.5]  # v0 and v1 are nearly equal; v2 is far better
    b = board(simulate(strengths, 25, seed=3))
    s = {x.variant: x for x in b.standings}
    for x, y in itertools.combinations(s, 2):
        overlap = s[x].ci_low <= s[y].ci_high and s[y].ci_low <= s[x].ci_high
        assert b.cannot_separate(x, y) == overlap
    assert b.cannot_separate("v0", "v1") and not b.cannot_separate("v2", "v0")
    assert s["v2"].rank == s["v2"].rank_worst == 1
    assert s["v0"].rank == s["v1"].rank == 2 and s["v0"].rank_worst == s["v1"].rank_worst == 3
    assert s["v0"].rank_text == "2–3"


def test_groups_never_compared_cannot_be_separated():
    votes = [Vote("a1", "a2", "a") for _ in range(20)] + [Vote("b1", "b2", "a") for _ in range(20)]
    b = board(votes)
    assert not b.cannot_separate("a1", "a2")
    assert b.cannot_separate("a1", "b2") and math.isinf(b.pair("a1", "b2").diff_high)
    groups = {s.variant: s.group for s in b.standings}
    assert groups["a1"] == groups["a2"] != groups["b1"] == groups["b2"]
    assert b.standing("a1").rank == 1 and b.standing("a1").rank_worst == 3  # b1 may be above or below it


def test_win_rate_matrix_counts_ties_as_half():
    votes = [Vote("x", "y", "a"), Vote("y", "x", "a"), Vote("x", "y", "tie"), Vote("x", "y", "both_bad"),
             Vote("x", "z", "a")]
    b = board(votes)
    order = [s.variant for s in b.standings]
    matrix = b.win_rates()
    rate = {(order[r], order[c]): matrix[r][c] for r in range(3) for c in range(3)}
    assert rate[("x", "y")] == pytest.approx(0.5) and rate[("y", "x")] == pytest.approx(0.5)
    assert rate[("x", "z")] == 1.0 and rate[("z", "x")] == 0.0
    assert rate[("y", "z")] is None and rate[("x", "x")] is None


def test_human_and_judge_votes_are_counted_apart_with_their_agreement():
    human = [Vote("x", "y", "a", case_id="c1"), Vote("x", "y", "b", case_id="c2"), Vote("x", "z", "tie", case_id="c1")]
    judge = [Vote("y", "x", "b", case_id="c1", source="judge", judge="J"),  # agrees: x, sides swapped
             Vote("x", "y", "a", case_id="c2", source="judge", judge="J"),  # disagrees
             Vote("z", "x", "both_bad", case_id="c1", source="judge", judge="K"),  # agrees: neither
             Vote("x", "z", "a", case_id="c9", source="judge", judge="K")]  # no human vote on c9
    b = board(human + judge)
    assert (b.sources.human, b.sources.judge, b.sources.judges) == (3, 4, {"J": 2, "K": 2})
    assert (b.sources.compared, b.sources.agreed) == (3, 2)
    assert b.sources.agreement == pytest.approx(2 / 3)
    only_judges = board(human + judge, source="judge")
    assert sum(s.votes for s in only_judges.standings) == 2 * 4
    assert board(human).sources.agreement is None


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3), st.sampled_from(["a", "b", "tie", "both_bad"])),
                max_size=30), st.randoms(use_true_random=False))
def test_any_vote_list_gives_a_board_independent_of_order_and_sides(raw, rnd):
    votes = [Vote(f"k{i}", f"k{(i + d) % 4}", w, id=f"id{n}") for n, (i, d, w) in enumerate(raw)]
    first = board(votes, rounds=50)
    flipped = [Vote(v.b, v.a, {"a": "b", "b": "a"}.get(v.winner, v.winner), id=v.id) for v in votes]
    rnd.shuffle(flipped)
    second = board(flipped, rounds=50)
    assert first.standings == second.standings
    for s in first.standings:
        assert math.isfinite(s.score) and s.ci_low <= s.score <= s.ci_high and 1 <= s.rank <= s.rank_worst
    assert sum(s.votes for s in first.standings) == 2 * len(votes)
