"""The stats panel's server section: what a server says of itself on its Prometheus `/metrics`.

Shown only for a server backend. With metrics: a plot of the server's running and waiting requests (its own
queue, which Chorus's client-side view cannot see) and a line with its generation throughput, which the
panel also draws in its Throughput plot next to the client's decode rate. Without `/metrics` (Ollama,
llama-cpp-python's server, llama-server without --metrics): one sentence saying so; the plots above stay the
client's view.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget


class ServerStats(QWidget):
    """Owns its sample arrays (the same length as the panel's); `push` adds one sample, `redraw` plots them."""

    def __init__(self, make_plot: Callable[[str, str], pg.PlotWidget], make_curve: Callable, n: int,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.running = np.full(n, np.nan)
        self.waiting = np.full(n, np.nan)
        self.generation_tps = np.full(n, np.nan)
        self.plot = make_plot("Server (its /metrics)", "requests")
        self.plot.setMinimumHeight(110)
        self.plot.setMaximumHeight(190)  # the client's two plots above keep the room
        self.running_curve = make_curve(self.plot, "running on the server", "active")
        self.waiting_curve = make_curve(self.plot, "waiting on the server", "queued")
        self.note = QLabel(objectName="serverNote", wordWrap=True,
                           toolTip="The server's own count of generated tokens per second, from /metrics. "
                                   "llama-server adds a request's tokens when it ends, so its rate moves in steps.")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.available: bool | None = None  # None: not a server

    def push(self, server: dict | None) -> None:
        """One sample from StatsSnapshot.server (None for a local engine)."""
        values = (np.nan, np.nan, np.nan)
        if server and server.get("available"):
            values = tuple(np.nan if server.get(k) is None else float(server[k])
                           for k in ("running", "waiting", "generation_tps"))
        for series, value in zip((self.running, self.waiting, self.generation_tps), values, strict=True):
            series[:-1] = series[1:]
            series[-1] = value
        self._show_state(server)

    def _show_state(self, server: dict | None) -> None:
        available = None if server is None else bool(server.get("available"))
        if available is False:
            self.note.setText(f"This server exposes no Prometheus /metrics ({server.get('reason', 'no reason')}); "
                              "the plots show what Chorus sees as its client.")
        elif available:
            tps = server.get("generation_tps")
            self.note.setText(f"Server: {server.get('running') or 0:g} running, {server.get('waiting') or 0:g} "
                              f"waiting · {0 if tps is None else tps:.1f} t/s reported (all its clients)")
        if available != self.available:
            self.available = available
            self.setVisible(available is not None)
            self.plot.setVisible(bool(available))

    def peak(self) -> float:
        return float(np.nanmax([np.nanmax(self.running, initial=0), np.nanmax(self.waiting, initial=0)]))

    def redraw(self, x: np.ndarray) -> None:
        if self.available:
            self.running_curve.setData(x, self.running)
            self.waiting_curve.setData(x, self.waiting)

    def clear(self) -> None:
        for series in (self.running, self.waiting, self.generation_tps):
            series.fill(np.nan)
