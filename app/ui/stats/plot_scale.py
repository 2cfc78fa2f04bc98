"""A plot's y axis from 0 in "nice" 1-2-5 steps, with plain grid lines, changed only when it must: a new range
makes pyqtgraph re-lay out the axis, and the axes' own grid repainted both axes under every curve update."""

from __future__ import annotations

import math

import pyqtgraph as pg


def nice_step(span: float, ticks: int = 4) -> float:
    """The 1-2-5 × 10^k step that splits `span` into about `ticks` intervals."""
    raw = max(span, 1e-9) / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if raw <= m * magnitude)


class YScale:
    """A plot's y range from 0 with ticks and horizontal grid lines at nice steps, changed only when needed."""

    def __init__(self, plot: pg.PlotWidget, pen):
        self.plot = plot
        self.pen = pen
        self.top: float | None = None
        self.lines: list[pg.InfiniteLine] = []

    def fit(self, needed: float) -> None:
        """Show at least [0, needed]; the top snaps to half steps so a slowly rising peak rarely moves it."""
        half = nice_step(needed) / 2
        top = half * math.ceil(needed / half)
        if top == self.top:
            return
        self.top = top
        step = nice_step(top)
        values = [i * step for i in range(int(top / step + 1e-9) + 1)]
        self.plot.setYRange(0, top, padding=0)
        self.plot.getAxis("left").setTicks([[(v, f"{v:g}") for v in values]])
        above_axis = values[1:]  # no grid line over the x axis
        while len(self.lines) < len(above_axis):
            line = pg.InfiniteLine(angle=0, pen=self.pen, movable=False)
            self.plot.addItem(line, ignoreBounds=True)
            self.lines.append(line)
        for i, line in enumerate(self.lines):
            line.setVisible(i < len(above_axis))
            if i < len(above_axis):
                line.setValue(above_axis[i])
