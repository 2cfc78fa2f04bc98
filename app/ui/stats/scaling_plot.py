"""The scaling test's chart (pyqtgraph): aggregate and per-request decode rates against concurrency, the knee
marked. Draws into a PlotWidget (the window's dialog) or writes a PNG offscreen (`bench --scale --png`)."""

from __future__ import annotations

import math
import os

from app.backends.scaling import Knee, Level

AGGREGATE, PER_REQUEST, KNEE = "#2563eb", "#f59e0b", "#10b981"


def draw(plot, levels: list[Level], knee: Knee | None) -> None:
    import pyqtgraph as pg

    plot.clear()
    plot.setLabel("bottom", "concurrent requests")
    plot.setLabel("left", "decode tokens / s")
    plot.showGrid(x=True, y=True, alpha=0.2)
    if plot.plotItem.legend is None:
        plot.addLegend(offset=(10, 10))
    if not levels:
        return
    xs = [math.log2(lv.concurrent) for lv in levels]
    plot.plot(xs, [lv.aggregate_tps for lv in levels], pen=pg.mkPen(AGGREGATE, width=3), symbol="o",
              symbolBrush=AGGREGATE, name="aggregate")
    plot.plot(xs, [lv.per_request_tps for lv in levels], pen=pg.mkPen(PER_REQUEST, width=3), symbol="s",
              symbolBrush=PER_REQUEST, name="per request")
    plot.getAxis("bottom").setTicks([[(x, str(lv.concurrent)) for x, lv in zip(xs, levels, strict=True)]])
    if knee is not None:
        plot.addItem(pg.InfiniteLine(math.log2(knee.concurrent), angle=90,
                                     pen=pg.mkPen(KNEE, width=2, style=pg.QtCore.Qt.DashLine),
                                     label=f"knee: {knee.concurrent}", labelOpts={"position": 0.9, "color": KNEE}))
    plot.setYRange(0, max(lv.aggregate_tps for lv in levels) * 1.15)


def write_png(levels: list[Level], knee: Knee | None, path: str, title: str = "") -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    plot = pg.PlotWidget(background="w")
    plot.resize(760, 440)
    if title:
        plot.setTitle(title, color="k")
    draw(plot, levels, knee)
    export_png(app, plot, path)
    plot.close()


def export_png(app, plot, path: str, width: int = 760) -> None:
    """A PlotWidget as a PNG (also scripts/plot_bench.py's)."""
    from pyqtgraph.exporters import ImageExporter

    plot.show()  # the exporter reads the laid-out axes: a never-shown widget exports stale geometry
    for _ in range(5):
        app.processEvents()
    exporter = ImageExporter(plot.plotItem)
    exporter.parameters()["width"] = width
    exporter.export(path)
