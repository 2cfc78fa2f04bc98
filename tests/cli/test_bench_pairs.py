"""The benchmark's paired figures (app/bench/pairs.py): ratios per repetition, their median, and how many pairs a
figure needs to be within ±5 %, on numbers worked by hand."""

import math

import pytest

from app.bench.pairs import figure, pairs_needed, ratios, reference_first


def test_a_figure_is_the_median_of_its_pair_ratios_not_a_ratio_of_medians():
    # The host slowed between repetitions: each pair agrees (about 0.9) while a ratio of medians would not.
    engine, raw = [180.0, 90.0, 135.0], [200.0, 100.0, 150.0]
    assert ratios(engine, raw) == pytest.approx([0.9, 0.9, 0.9])
    drifted = [180.0, 135.0, 90.0]  # the same rates in another order pair differently
    assert figure(ratios(drifted, raw))["median"] == pytest.approx(0.9)
    assert figure(ratios(drifted, raw))["pairs"] == pytest.approx([0.9, 1.35, 0.6])


def test_pairs_needed_follows_the_spread_of_the_pairs():
    # sd 0.1 around a median of 1.0: n = (1.96 × sqrt(pi/2) × 0.1 / 0.05)^2 = 24.1 -> 25
    assert pairs_needed([0.9, 1.0, 1.1]) == math.ceil((1.96 * math.sqrt(math.pi / 2) * 0.1 / 0.05) ** 2) == 25
    assert pairs_needed([0.99, 1.0, 1.01]) == 1  # tight pairs: one would do
    assert pairs_needed([1.0]) is None  # one pair shows no spread
    assert pairs_needed([0.9, 1.0, 1.1], within=0.1) == 7  # twice as wide an interval: a quarter of the pairs


def test_the_reference_runs_first_every_other_repetition():
    assert [reference_first(rep) for rep in range(1, 6)] == [False, True, False, True, False]
