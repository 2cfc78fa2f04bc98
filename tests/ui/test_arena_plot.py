"""The arena leaderboard plot (offscreen): a row per variant, best at the top, error bars over the intervals,
and a variant without votes drawn unbounded to the plot's edges."""

import math

import numpy as np

from app.arena import board
from app.ui.arena.plot import ArenaPlot
from tests.fixtures.arena_sim import simulate


def test_plot_shows_scores_with_error_bars(qtbot):
    b = board(simulate([0.0, 0.3, 1.2], 15, seed=2), variants=["no-votes"], labels={"v2": "Best <one>"})
    plot = ArenaPlot()
    qtbot.addWidget(plot)
    plot.set_standings(b.standings)
    plot.resize(640, 260)
    plot.show()
    qtbot.waitExposed(plot)

    xs, ys = plot.points.getData()
    assert list(xs) == [s.score for s in b.standings]
    assert list(ys) == [3.0, 2.0, 1.0, 0.0]  # the best at the top
    assert plot.row_labels[0] == "Best <one>" and "no-votes" in plot.row_labels
    ticks = plot.getAxis("left")._tickLevels[0]
    assert [label for _, label in ticks] == plot.row_labels

    bounded = [s for s in b.standings if math.isfinite(s.ci_low)]
    opts = plot.bars.opts
    assert np.allclose(opts["x"], [s.score for s in bounded])
    assert np.allclose(opts["left"], [s.score - s.ci_low for s in bounded])
    assert np.allclose(opts["right"], [s.ci_high - s.score for s in bounded])

    lo, hi = plot.x_range
    unbounded = plot.unbounded.opts
    assert len(unbounded["x"]) == 1 and unbounded["x"][0] == 1000.0
    assert math.isclose(unbounded["x"][0] - unbounded["left"][0], lo)
    assert math.isclose(unbounded["x"][0] + unbounded["right"][0], hi)
    assert all(lo <= s.ci_low and s.ci_high <= hi for s in bounded)
    assert plot.viewRange()[0] == [lo, hi]
    assert not plot.grab().isNull()

    plot.set_standings([])  # an empty board clears the plot
    assert len(plot.points.getData()[0]) == 0 and plot.row_labels == []
