"""The pair-selection rule: uncertain, under-voted pairs first; deterministic given the seed; sides and cases."""

from collections import Counter

import numpy as np
import pytest

from app.arena import Vote, board, next_pair, priorities
from tests.fixtures.arena_sim import simulate


def _votes(x, y, wins_x, wins_y, case="c1"):
    return [Vote(x, y, "a", case_id=case) for _ in range(wins_x)] + [Vote(y, x, "a", case_id=case)
                                                                      for _ in range(wins_y)]


def test_prefers_the_pair_whose_order_is_least_certain():
    votes = _votes("A", "B", 20, 0) + _votes("B", "C", 20, 0) + _votes("C", "D", 6, 6)
    ranked = priorities(["A", "B", "C", "D"], votes)
    assert (ranked[0].x, ranked[0].y) == ("C", "D") and ranked[0].uncertainty > 0.5
    certain = next(q for q in ranked if (q.x, q.y) == ("A", "B"))
    assert certain.uncertainty < 0.05 and certain.priority < ranked[0].priority
    m = next_pair(["A", "B", "C", "D"], votes)
    assert {m.a, m.b} == {"C", "D"}


def test_prefers_the_pair_with_fewer_votes_when_equally_uncertain():
    votes = _votes("A", "B", 15, 15) + _votes("C", "D", 3, 3) + _votes("A", "C", 10, 10)
    ranked = priorities(["A", "B", "C", "D"], votes)
    by_pair = {(q.x, q.y): q for q in ranked}
    assert by_pair[("C", "D")].votes == 6 and by_pair[("A", "B")].votes == 30
    assert by_pair[("C", "D")].priority > by_pair[("A", "B")].priority


def test_a_variant_without_votes_is_shown_next():
    votes = _votes("A", "B", 8, 2)
    m = next_pair(["A", "B", "new"], votes, seed=4)
    assert "new" in (m.a, m.b) and m.uncertainty == 1.0 and m.votes == 0


def test_deterministic_given_the_seed_and_independent_of_vote_order():
    votes = simulate([0.0, 0.3, 0.6, 0.9], 5, seed=2)
    variants = ["v0", "v1", "v2", "v3"]
    first = next_pair(variants, votes, cases=["c1", "c2", "c3"], seed=11)
    assert next_pair(variants, votes, cases=["c1", "c2", "c3"], seed=11) == first
    assert next_pair(list(reversed(variants)), votes[::-1], cases=["c1", "c2", "c3"], seed=11) == first
    assert next_pair(variants, votes, seed=11, the_board=board(votes, variants=variants, seed=11)) == \
        next_pair(variants, votes, seed=11)


def test_sides_are_random_and_the_case_is_the_least_voted_for_that_pair():
    sides = Counter(next_pair(["x", "y"], [], seed=s).a for s in range(200))
    assert 70 < sides["x"] < 130 and sides["x"] + sides["y"] == 200
    votes = _votes("x", "y", 2, 2, case="c1") + _votes("x", "y", 1, 0, case="c2") + _votes("x", "z", 5, 5, "c3")
    assert next_pair(["x", "y"], votes, cases=["c1", "c2", "c3"], seed=1).case == "c3"  # x–y never on c3
    assert {next_pair(["x", "y"], votes, cases=["c1", "c2"], seed=s).case for s in range(20)} == {"c2"}


def test_an_adaptive_arena_spends_its_votes_on_the_close_pair():
    """Voting where the rule points, with outcomes from known strengths: the two nearly-equal variants get
    more votes than any pair the data already separates."""
    strengths = {"a": 0.0, "b": 0.1, "c": 3.0, "d": 6.0}
    rng = np.random.default_rng(0)
    votes: list[Vote] = []
    for _ in range(80):
        m = next_pair(list(strengths), votes, seed=0)
        p = 1 / (1 + np.exp(-(strengths[m.a] - strengths[m.b])))
        votes.append(Vote(m.a, m.b, "a" if rng.random() < p else "b"))
    per_pair = Counter(v.pair for v in votes)
    assert per_pair[("a", "b")] == max(per_pair.values())
    assert per_pair[("a", "b")] > 2 * per_pair[("a", "d")]
    assert len(per_pair) == 6  # every pair was shown at least once


def test_needs_two_variants():
    with pytest.raises(ValueError, match="at least two variants"):
        next_pair(["only"], [])


def test_a_skipped_pair_comes_back_only_after_every_other_pair():
    first = next_pair(["A", "B", "C"], [])
    skipped = {frozenset((first.a, first.b))}
    second = next_pair(["A", "B", "C"], [], skip=skipped)  # no vote changed: without `skip`, the same pair again
    assert {second.a, second.b} != {first.a, first.b}
    skipped.add(frozenset((second.a, second.b)))
    third = next_pair(["A", "B", "C"], [], skip=skipped)
    assert frozenset((third.a, third.b)) not in skipped
    again = next_pair(["A", "B", "C"], [], skip=skipped | {frozenset((third.a, third.b))})
    assert {again.a, again.b} == {first.a, first.b}  # every pair skipped: the draw is over all of them again
