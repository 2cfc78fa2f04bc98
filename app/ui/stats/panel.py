"""Live plots of what the batch is doing: slots and queue, decode and prefill rates, over a rolling window.

Fed by a QTimer polling `engine.stats()` snapshots (never by per-token signals), so its cost is fixed per tick
whatever the number of panes. The rates plotted are the snapshot's recent ones (`recent_decode_tps`,
`recent_prefill_tps`: tokens in the trailing `limits.RATE_WINDOW_S` of wall clock, app/engine/rates.py), so a
burst shows as a burst instead of vanishing into a lifetime mean, without per-tick jitter. The occupancy plot draws
the slots in use, never above the slots line: a coalesced follower holds no slot and is counted apart, in the
readouts (app/ui/stats/readouts.py, which also say which window each figure covers). The curves' names are in
each plot's title: a legend inside the plot covered the newest samples at its right edge.

The panel shares two cores with the model, so each tick repaints as little as it can: the y range moves in
"nice" steps and only when it must (a new range makes pyqtgraph re-lay out the axis), and the grid is a few
plain lines instead of the axes' own grid, which made both axes repaint under every curve update. Curves are
drawn segment by segment: Qt strokes a wide antialiased polyline as one self-intersecting polygon, which cost
~3 ms per curve once the 60 s window was full; segments look the same at a third of the cost. Readout values
have a fixed size and fill their background, so new text repaints just them (see StatusLine).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from app.engine import StatsSnapshot
from app.session import MAIN
from app.ui.run_pump import FEW_RUNS
from app.ui.stats import plot_theme
from app.ui.stats.plot_scale import YScale
from app.ui.stats.plot_theme import series_color, style_plot
from app.ui.stats.readouts import Readouts, slots_in_use, strip_text
from app.ui.stats.server import ServerStats
from app.ui.widgets.status_line import StatusLine

# Above this many active requests the panel samples at half its rate and redraws its plots every other sample
# (1 Hz at the default 4 Hz): every ms of GUI work is taken from the model's threads, and the plots were the
# largest share of it (docs/benchmarks.md).
BUSY_ACTIVE = FEW_RUNS

# Each series' hue; plot_theme.series_color fits its lightness to the plot's background (light or dark theme).
COLORS = {"active": "#3b82f6", "queued": "#f59e0b", "slots": "#9ca3af", "decode": "#10b981", "prefill": "#ef4444",
          "server": "#8b5cf6"}
GRID_ALPHA = 40  # of 255


class StatsPanel(QWidget):
    """`source()` returns the latest StatsSnapshot, or None while no model is loaded; `reset_source()`
    clears the engine's counters when the user presses Reset."""

    def __init__(self, source: Callable[[], StatsSnapshot | None],
                 reset_source: Callable[[], None] | None = None, window_s: float = 60.0, hz: float = 4.0,
                 parent: QWidget | None = None, clock: Callable[[], float] = time.monotonic):
        """`clock` times the samples (the plots' x axis); tests pass their own."""
        super().__init__(parent)
        self.setObjectName("statsPanel")
        self._source = source
        self._clock = clock
        self._reset_source = reset_source
        self.window_s = window_s
        n = int(window_s * hz)
        self.t = np.full(n, np.nan)
        self.active = np.full(n, np.nan)
        self.queued = np.full(n, np.nan)
        self.decode_rate = np.full(n, np.nan)
        self.prefill_rate = np.full(n, np.nan)
        self.updates = 0
        self.last_update_ms = 0.0

        pg.setConfigOptions(antialias=True)
        self._legends: dict[pg.PlotWidget, tuple[str, list[tuple[str, str]]]] = {}  # plot -> title, curves
        self._curves: list[tuple[pg.PlotDataItem, str]] = []  # each curve with its COLORS key
        self._grid_lines: list[pg.InfiniteLine] = []  # the vertical ones; YScale keeps the horizontal
        self.occupancy_plot = self._plot("Slots and queue", "requests")
        self.rate_plot = self._plot("Throughput", "tokens / s")
        grid_pen = self._grid_pen()
        self.occupancy_scale = YScale(self.occupancy_plot, grid_pen)
        self.rate_scale = YScale(self.rate_plot, grid_pen)
        for plot in (self.occupancy_plot, self.rate_plot):
            for x in range(-int(self.window_s) + 10, 0, 10):
                line = pg.InfiniteLine(pos=x, angle=90, pen=grid_pen, movable=False)
                plot.addItem(line, ignoreBounds=True)
                self._grid_lines.append(line)
        self.rate_plot.setXLink(self.occupancy_plot)
        self.active_curve = self._curve(self.occupancy_plot, "active slots", "active")
        self.queued_curve = self._curve(self.occupancy_plot, "queued", "queued")
        slots = series_color(COLORS["slots"], self.palette())
        self.slots_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(slots, width=1, style=Qt.DashLine),
                                          label="slots", labelOpts={"position": 0.05, "color": slots})
        self.occupancy_plot.addItem(self.slots_line)
        self.decode_curve = self._curve(self.rate_plot, "decode", "decode")
        self.prefill_curve = self._curve(self.rate_plot, "prefill", "prefill")

        self.server = ServerStats(self._plot, self._curve, n)
        self.server_scale = YScale(self.server.plot, grid_pen)
        self.server_decode_curve = self._curve(self.rate_plot, None, "server")  # named for servers only
        self._server_in_legend = False
        self.readout_grid = Readouts()
        self.readouts = self.readout_grid.labels
        self.backend_box = QComboBox(toolTip="Whose figures the panel shows")
        self.backend_box.addItem(MAIN, MAIN)
        self.backend_box.hide()  # shown once there is more than one backend
        self.pause_button = QPushButton("Pause", checkable=True, toolTip="Freeze the plots")
        self.reset_button = QPushButton("Reset", toolTip="Clear the plots and the engine's counters")
        buttons = QHBoxLayout()
        buttons.addWidget(self.pause_button)
        buttons.addWidget(self.reset_button)
        buttons.addStretch(1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.backend_box)
        layout.addWidget(self.occupancy_plot, 2)
        layout.addWidget(self.rate_plot, 2)
        layout.addWidget(self.server, 1)  # its own queue; the client's plots keep most of the height
        layout.addWidget(self.readout_grid)
        layout.addLayout(buttons)
        self.server.hide()
        self.compact = False  # set_compact: one line of figures instead of the plots and readouts
        self.strip = StatusLine("–", parent=self)
        self.strip.setObjectName("statsStrip")
        self.strip.hide()
        layout.addWidget(self.strip)

        self.interval_ms = int(1000 / hz)
        self.timer = QTimer(self, interval=self.interval_ms)
        self.timer.timeout.connect(self.update_once)
        self.pause_button.toggled.connect(self.set_paused)
        self.reset_button.clicked.connect(self.reset)
        self.backend_box.currentIndexChanged.connect(self._backend_changed)
        self.timer.start()
        self.occupancy_scale.fit(5)
        self.rate_scale.fit(10)
        self.server_scale.fit(5)

    def _grid_pen(self):
        colour = QColor(plot_theme.foreground(self.palette()))
        colour.setAlpha(GRID_ALPHA)
        return pg.mkPen(colour, width=1)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.PaletteChange:
            self.apply_palette()

    def apply_palette(self) -> None:
        """Light <-> dark: the plots, curves, grid and legends take the new palette's colours."""
        palette, grid_pen = self.palette(), self._grid_pen()
        for plot in self._legends:
            style_plot(plot, palette)
            self._show_legend(plot)
        for item, key in self._curves:
            item.setPen(pg.mkPen(series_color(COLORS[key], palette), width=2))
        slots = series_color(COLORS["slots"], palette)
        self.slots_line.setPen(pg.mkPen(slots, width=1, style=Qt.DashLine))
        self.slots_line.label.setColor(slots)
        for scale in (self.occupancy_scale, self.rate_scale, self.server_scale):
            scale.pen = grid_pen
            for line in scale.lines:
                line.setPen(grid_pen)
        for line in self._grid_lines:
            line.setPen(grid_pen)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._redraw(self._clock())

    def _plot(self, title: str, unit: str) -> pg.PlotWidget:
        plot = pg.PlotWidget()
        plot.setAccessibleName(f"{title} plot")
        self._legends[plot] = (title, [])
        self._show_legend(plot)
        plot.setLabel("left", unit)
        plot.setLabel("bottom", "time", units="s")
        for axis in ("left", "bottom"):
            plot.getAxis(axis).enableAutoSIPrefix(False)  # no "(x0.001)" on an idle, all-zero plot
        style_plot(plot, self.palette())
        plot.setXRange(-self.window_s, 0, padding=0)
        plot.setMouseEnabled(x=False, y=False)
        plot.setMinimumHeight(140)
        return plot

    def _curve(self, plot: pg.PlotWidget, name: str | None, color: str):
        item = plot.plot([], [], pen=pg.mkPen(series_color(COLORS[color], self.palette()), width=2),
                         connect="finite")
        item.curve.setSegmentedLineMode("on")
        self._curves.append((item, color))
        if name:
            self._legends[plot][1].append((name, color))
            self._show_legend(plot)
        return item

    def _show_legend(self, plot: pg.PlotWidget) -> None:
        """The curves' names in the plot's title, beside it: a legend inside the plot covered the newest samples,
        which are drawn at its right edge."""
        title, entries = self._legends[plot]
        palette = self.palette()
        keys = "&nbsp;&nbsp;".join(f"<span style='color:{series_color(COLORS[key], palette).name()}'>━</span>"
                                   f"&nbsp;{name}" for name, key in entries)
        plot.setTitle(f"<b>{title}</b>&nbsp;&nbsp;&nbsp;{keys}", color=self.palette().color(QPalette.Text).name(),
                      size="9pt")

    def set_compact(self, compact: bool) -> None:
        """A strip of the key figures (slots, queue, rates) in one line, for a window too narrow for the plots
        beside the panes; or the whole panel again."""
        self.compact = compact
        for widget in (self.occupancy_plot, self.rate_plot, self.readout_grid, self.pause_button,
                       self.reset_button):
            widget.setVisible(not compact)
        self.server.setVisible(not compact and self.server.available is not None)
        self.strip.setVisible(compact)

    @property
    def paused(self) -> bool:
        return not self.timer.isActive()

    def set_paused(self, paused: bool) -> None:
        self.pause_button.setText("Resume" if paused else "Pause")
        if paused:
            self.timer.stop()
        else:
            self.timer.start()

    @property
    def backend(self) -> str:
        """The backend whose figures are shown (MAIN unless the user picked another)."""
        return self.backend_box.currentData() or MAIN

    def set_backends(self, names: list[str], labels: dict[str, str] | None = None) -> None:
        """Offer these backends, each shown by its label (else its name); the one shown stays if it still exists,
        else MAIN."""
        shown = self.backend
        self.backend_box.blockSignals(True)
        self.backend_box.clear()
        for name in names:
            self.backend_box.addItem((labels or {}).get(name, name), name)
        self.backend_box.setCurrentIndex(max(0, self.backend_box.findData(shown if shown in names else MAIN)))
        self.backend_box.setVisible(len(names) > 1)
        self.backend_box.blockSignals(False)
        if self.backend != shown:
            self._backend_changed()

    def _backend_changed(self) -> None:
        self.clear()
        self.readout_grid.clear()

    def clear(self) -> None:
        """Forget the samples (another backend, or a reset)."""
        for series in (self.t, self.active, self.queued, self.decode_rate, self.prefill_rate):
            series.fill(np.nan)
        self.server.clear()
        self._redraw(self._clock())

    def reset(self) -> None:
        if self._reset_source:
            self._reset_source()
        self.clear()

    def update_once(self) -> None:
        started = time.perf_counter()
        snap = self._source()
        now = self._clock()
        if snap is None:  # no model (loading, or none): no figure to show, rather than the last one's
            self.readout_grid.clear()
        else:
            for series, value in ((self.t, now), (self.active, slots_in_use(snap)), (self.queued, snap.queued),
                                  (self.decode_rate, snap.recent_decode_tps),  # None (not measured): a gap
                                  (self.prefill_rate, snap.recent_prefill_tps)):
                series[:-1] = series[1:]
                series[-1] = np.nan if value is None else value
            self.server.push(snap.server)
            self.readout_grid.show_snapshot(snap)
            if self.compact:
                self.strip.setText(strip_text(snap))
            self.slots_line.setValue(snap.n_slots)  # a no-op (no repaint) when unchanged
            self.occupancy_scale.fit(max(snap.n_slots, np.nanmax(self.queued)) + 1)
            self.updates += 1
        busy = snap is not None and snap.active > BUSY_ACTIVE
        if self.timer.interval() != self.interval_ms * (1 + busy):
            self.timer.setInterval(self.interval_ms * (1 + busy))
        if self.isVisible() and not (busy and self.updates % 2):  # hidden: sample only
            self._redraw(now)
        self.last_update_ms = (time.perf_counter() - started) * 1000

    def _redraw(self, now: float) -> None:
        peak = np.nanmax([np.nanmax(series, initial=0)
                          for series in (self.decode_rate, self.prefill_rate, self.server.generation_tps)])
        self.rate_scale.fit(max(10.0, float(peak) * 1.1))  # rates are never negative
        x = self.t - now
        self.active_curve.setData(x, self.active)
        self.queued_curve.setData(x, self.queued)
        self.decode_curve.setData(x, self.decode_rate)
        self.prefill_curve.setData(x, self.prefill_rate)
        self.server_decode_curve.setData(x, self.server.generation_tps)
        if bool(self.server.available) != self._server_in_legend:
            self._server_in_legend = not self._server_in_legend
            entries = self._legends[self.rate_plot][1]
            entries.append(("server decode", "server")) if self._server_in_legend else entries.pop()
            self._show_legend(self.rate_plot)
        if self.server.available:
            self.server_scale.fit(self.server.peak() + 1)
            self.server.redraw(x)
