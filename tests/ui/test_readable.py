"""Small things a new user sees: the leaderboard's axes are readable, and the first window fits the screen."""

from PySide6.QtGui import QColor, QPalette

from app.arena import board
from app.ui.arena_plot import ArenaPlot
from tests.arena.arena_sim import simulate


def contrast(a: QColor, b: QColor) -> float:
    """WCAG 2 contrast ratio of two colours (4.5 is the minimum for body text)."""
    def luminance(c: QColor) -> float:
        def channel(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF())

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_leaderboards_axis_labels_read_against_its_background(qtbot):
    plot = ArenaPlot()
    qtbot.addWidget(plot)
    plot.set_standings(board(simulate([0.0, 0.5], 10, seed=1)).standings)
    background = plot.palette().color(QPalette.Window)  # the plot is transparent over the dialog
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        assert contrast(axis.textPen().color(), background) >= 4.5, name
    label = plot.getAxis("bottom").label.defaultTextColor()
    assert contrast(label, background) >= 4.5
