"""Plot the throughput scaling curve from a bench JSON: python scripts/plot_bench.py docs/bench-latest.json OUT.png"""

import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pyqtgraph as pg  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.ui.stats.scaling_plot import export_png  # noqa: E402


def main() -> None:
    result = json.load(open(sys.argv[1], encoding="utf-8"))
    out = sys.argv[2]
    app = QApplication.instance() or QApplication(sys.argv)
    plot = pg.PlotWidget(background="w")
    plot.resize(760, 440)
    plot.setTitle(f"Aggregate decode throughput, {result['threads']} threads (median of "
                  f"{result['setup']['repetitions']})", color="k")
    plot.setLabel("bottom", "concurrent requests (N)", color="k")
    plot.setLabel("left", "tokens / s", color="k")
    plot.showGrid(x=True, y=True, alpha=0.2)
    plot.addLegend(offset=(10, 10), labelTextColor="k")
    tp = result["throughput"]
    sizes = sorted(int(n) for n in tp["engine"])
    for key, name, color in (("engine", "Chorus engine", "#2563eb"), ("raw_loop", "bare decode loop", "#9ca3af")):
        plot.plot(sizes, [tp[key][str(n)] for n in sizes], pen=pg.mkPen(color, width=3), symbol="o",
                  symbolBrush=color, symbolSize=9, name=name)
    for key, name, color in (("llama_threads", "Llama ×4 in threads (N=4)", "#ef4444"),
                             ("llama_sequential", "one Llama, in turn (N=4)", "#f59e0b")):
        plot.plot([4], [tp[key]["4"]], pen=None, symbol="s", symbolBrush=color, symbolSize=12, name=name)
    plot.setLogMode(x=True, y=False)
    plot.getAxis("bottom").setTicks([[(v, str(n)) for n, v in ((n, __import__("math").log10(n)) for n in sizes)]])
    plot.setYRange(0, max(max(tp["engine"].values()), max(tp["raw_loop"].values())) * 1.15)
    export_png(app, plot, out)


if __name__ == "__main__":
    main()
