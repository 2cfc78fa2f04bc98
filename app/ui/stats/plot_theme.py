"""pyqtgraph plots in the palette's colours: the background is the palette's base, axes, tick labels and axis
titles its text, and a curve keeps its hue at a lightness that stands out from the background (WCAG 2's 3:1 for
graphics). pyqtgraph draws with colours of its own (a black background, grey axes) unless told; a plot styled
here follows a light and a dark theme alike, and is styled again by its owner on `QEvent.PaletteChange`.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette

from app.ui.theme import readable

SERIES_CONTRAST = 3.0  # WCAG 2 non-text contrast: a curve against the plot's background
AXES = ("left", "bottom")


def background(palette: QPalette) -> QColor:
    return palette.color(QPalette.Base)


def foreground(palette: QPalette) -> QColor:
    return palette.color(QPalette.Text)


def series_color(hue: str | QColor, palette: QPalette) -> QColor:
    """A curve's colour: its hue, as light or dark as the background needs."""
    return readable(hue, background(palette), SERIES_CONTRAST)


def style_plot(plot: pg.PlotWidget, palette: QPalette) -> None:
    """Background, axes, tick labels and axis titles from `palette` (the titles keep their text and units)."""
    text = foreground(palette)
    plot.setBackground(background(palette))
    for name in AXES:
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
        if axis.labelText or axis.labelUnits:
            axis.setLabel(axis.labelText, axis.labelUnits, color=text.name())
