"""The long prompt's figures beside the bound their own gap sets (app/bench/frontier.py)."""

import pytest

from app.bench.frontier import FRONTIER_SLACK, frontier_lines, frontier_point


def run(gap: float, ttft: float) -> dict:
    return {"steady_median_gap_s": 0.02, "prefill_p99_gap_s": 0.02 * gap, "idle_ttft_s": 4.0,
            "loaded_ttft_s": 4.0 * ttft}


def test_each_pacing_point_is_judged_against_its_own_gaps_bound():
    smooth = frontier_point([run(2.0, 2.5), run(2.2, 2.2), run(1.9, 2.4)], 2.0)  # medians: g 2.0, TTFT 2.4
    assert smooth["gap"] == pytest.approx(2.0) and smooth["bound"] == pytest.approx(2.0)
    assert smooth["goal"] == pytest.approx(FRONTIER_SLACK * 2.0) and not smooth["met"]  # 2.4 > 2.3
    fast = frontier_point([run(4.0, 1.5)], 4.0)
    assert fast["bound"] == pytest.approx(4 / 3) and fast["met"] and fast["pairs"]["gap"] == [pytest.approx(4.0)]
    lines = frontier_lines({"smooth": smooth, "fast": fast}, "smooth")
    assert "g ≤ 3 met" in lines[1] and "missed" in lines[1] and "default" in lines[1]
    assert "goal ≤ 1.53 met" in lines[2] and "g ≤ 3" not in lines[2]
