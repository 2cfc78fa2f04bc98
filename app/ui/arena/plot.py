"""The arena leaderboard as a plot: one row per variant, best at the top, a dot at its score and an error bar
over its 95 % interval (pyqtgraph's ErrorBarItem). An interval with an infinite end (a variant with no votes)
is drawn dashed to the edge of the plot instead. Axes and labels take the palette's text colour, readable in a
light and a dark theme. The widget renders the standings it is given and keeps no other state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QPalette

from app.arena import ANCHOR, Standing, display_names

COLOR = "#3b82f6"
MIN_SPAN = 40.0  # score points shown at least, so a lone variant is not a zoom into nothing


class ArenaPlot(pg.PlotWidget):
    """Scores with error bars. `set_standings(board.standings)` redraws it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setBackground(None)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.showGrid(x=True, y=False, alpha=0.25)
        text = self.palette().color(QPalette.WindowText)  # the dialog's own text colour: pyqtgraph's grey is faint
        for axis in ("left", "bottom"):
            self.getAxis(axis).setPen(pg.mkPen(text))
            self.getAxis(axis).setTextPen(pg.mkPen(text))
        self.setLabel("bottom", "score (Bradley–Terry, mean 1000)", color=text.name())
        pen = pg.mkPen(COLOR, width=2)
        self.bars = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), pen=pen, beam=0.25)
        self.unbounded = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), beam=0,
                                         pen=pg.mkPen(COLOR, width=2, style=Qt.PenStyle.DashLine))
        self.points = pg.ScatterPlotItem(size=10, brush=pg.mkBrush(COLOR), pen=pg.mkPen(None))
        for item in (self.bars, self.unbounded, self.points):
            self.addItem(item)
        self.row_labels: list[str] = []
        self.x_range: tuple[float, float] = (ANCHOR - MIN_SPAN, ANCHOR + MIN_SPAN)

    def set_standings(self, standings: Sequence[Standing], names: Mapping[str, str] | None = None) -> None:
        names = dict(names or display_names(standings))
        n = len(standings)
        y = np.arange(n, dtype=float)[::-1]  # the best at the top
        score = np.array([s.score for s in standings], dtype=float)
        low = np.array([s.ci_low for s in standings], dtype=float)
        high = np.array([s.ci_high for s in standings], dtype=float)
        finite = np.concatenate([score, low[np.isfinite(low)], high[np.isfinite(high)]])
        lo, hi = (float(finite.min()), float(finite.max())) if n else (ANCHOR, ANCHOR)
        pad = max((hi - lo) * 0.08, (MIN_SPAN - (hi - lo)) / 2, 10.0)
        self.x_range = (lo - pad, hi + pad)
        left = np.where(np.isfinite(low), score - low, score - self.x_range[0])
        right = np.where(np.isfinite(high), high - score, self.x_range[1] - score)
        bounded = np.isfinite(low) & np.isfinite(high)
        self.bars.setData(x=score[bounded], y=y[bounded], left=left[bounded], right=right[bounded])
        self.unbounded.setData(x=score[~bounded], y=y[~bounded], left=left[~bounded], right=right[~bounded])
        self.points.setData(x=score, y=y, data=[s.variant for s in standings])
        self.row_labels = [names.get(s.variant, s.label) for s in standings]
        axis = self.getAxis("left")
        axis.setTicks([[(float(y[k]), self.row_labels[k]) for k in range(n)]])
        metrics = QFontMetrics(axis.style.get("tickFont") or self.font())
        axis.setWidth(max([metrics.horizontalAdvance(t) for t in self.row_labels] + [20]) + 16)
        self.setXRange(*self.x_range, padding=0)
        self.setYRange(-0.6, max(n - 0.4, 0.4), padding=0)
        self.setToolTip("\n".join(f"{self.row_labels[k]}: {_fmt(s.score)} [{_fmt(s.ci_low)}, {_fmt(s.ci_high)}]"
                                  for k, s in enumerate(standings)))


def _fmt(x: float) -> str:
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.0f}"
