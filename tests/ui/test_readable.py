"""Small things a new user sees: the leaderboard's axes are readable, and the first window fits the screen."""

from PySide6.QtGui import QColor, QPalette

from app.arena import board
from app.ui.arena.plot import ArenaPlot
from tests.fixtures.arena_sim import simulate


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


def test_the_first_window_fits_the_screen_and_is_centred(window):
    """No saved geometry and no window manager (offscreen: an 800 × 800 screen): the window is the default size
    bounded by the screen's available area, in its centre, not 1400 × 860 in a corner."""
    from PySide6.QtCore import QRect

    from app.ui.widgets.screen_fit import DEFAULT_SIZE, first_geometry

    available = window.screen().availableGeometry()
    frame = window.frameGeometry()
    assert available.contains(frame), (frame, available)
    assert (frame.center() - available.center()).manhattanLength() <= 4
    assert first_geometry(QRect(0, 0, 1600, 1000)) == QRect(100, 70, 1400, 860)  # the screen of the report
    small = first_geometry(QRect(0, 30, 1280, 690))  # a laptop with a top panel
    assert small.size() == DEFAULT_SIZE.boundedTo(small.size()) and QRect(0, 30, 1280, 690).contains(small)
    assert (small.center() - QRect(0, 30, 1280, 690).center()).manhattanLength() <= 1
