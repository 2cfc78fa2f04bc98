"""`bench --soak` (app/__main__.py hands it to the benchmark): the real MainWindow (offscreen) kept busy for the
plan's time, its resources sampled (app/bench/soak.py says what, and how end ÷ start is taken).

What runs: the plan's panes (different prompts, sampled at temperature 0.7) regenerate as soon as each finishes, so
every pane gathers versions; an evaluation of `plan.eval_cells` cells (a promptfoo config on the main model, short
answers, a `contains` check) runs beside them; the session autosaves as it always does. The window is measured
as users keep it: nothing is cleared between samples.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

import yaml

PROMPTS = ["Write a short story about a lighthouse.", "Explain photosynthesis.", "List ten fruits.",
           "Describe a busy market.", "Write a poem about snow.", "How do airplanes fly?",
           "Give tips for a job interview.", "Describe the moon to a child."]
TOPICS = ("rivers", "bread", "clocks", "owls", "trains", "salt", "glass", "bees", "maps", "tea")
POLL_S = 0.2  # how often idle panes are started again (the soak's own GUI work: small beside the window's)


def eval_config(folder: Path, model_path: str, cells: int) -> Path:
    """A promptfoo config of `cells` test cases on the main model: short answers and a `contains` check."""
    tests = [{"vars": {"topic": TOPICS[i % len(TOPICS)], "n": i}, "assert": [{"type": "contains", "value": "the"}]}
             for i in range(cells)]
    config = {"description": "soak", "prompts": ["Say one sentence about {{topic}} (number {{n}})."],
              "providers": [{"id": f"file://{model_path}", "config": {"max_tokens": 16, "temperature": 0.7}}],
              "tests": tests}
    path = folder / "soak.promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def qt_objects() -> int:
    """Every QObject the application holds: the top-level widgets and their children, and the app's own."""
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    tops = app.topLevelWidgets()
    return len(app.findChildren(QObject)) + sum(1 + len(w.findChildren(QObject)) for w in tops)


def _file_mb(path) -> float:
    try:
        return Path(path).stat().st_size / 1e6
    except (OSError, TypeError):
        return 0.0


async def _soak(window, plan, model_path: str, threads: int, folder: Path, sample, watch) -> dict:
    from app.ui import settings as keys

    window.settings.set(keys.SLOTS, max(8, plan.panes))
    window.settings.set(keys.CONTEXT_PER_SLOT, 512)
    window.settings.set(keys.THREADS, threads)
    await window.load_model(model_path)
    while len(window.grid.panes) < plan.panes:
        window.grid.add_pane()
    for i, pane in enumerate(window.grid.panes):
        pane.prompt.setPlainText(PROMPTS[i % len(PROMPTS)])
        pane.sampling.temperature.setValue(0.7)
        pane.sampling.max_tokens.setValue(plan.max_tokens)
    engine = getattr(window.bridge.main, "engine", None)
    saver, runs, samples = window.files.saver, 0, [0]

    def take_sample() -> None:
        sample(engine, gui_cpu_s=time.thread_time(), qt_objects=qt_objects(),  # this runs on the GUI thread
               session_file_mb=_file_mb(saver.path if saver else None),
               versions=sum(len(p.spec.versions) for p in window.grid.panes))
        samples[0] += 1

    def every_part_ran() -> bool:  # a short soak still exercises everything, however slow the machine: each
        # pane finished a run (its second began), an autosave was written, the evaluation ended
        evaluation = window.session.evaluation
        return (all(len(p.spec.versions) >= 2 for p in window.grid.panes) and saver is not None
                and saver.writes > 0 and evaluation is not None and not evaluation.unfinished()
                and samples[0] >= 3)

    window.evals.open_config(eval_config(folder, model_path, plan.eval_cells), run=True)
    started = next_sample = time.perf_counter()
    while time.perf_counter() - started < plan.seconds or not every_part_ran():
        for pane in window.grid.panes:
            if not pane.busy and pane.run():
                runs += 1
        watch(engine)
        if time.perf_counter() >= next_sample:
            take_sample()
            next_sample += plan.interval_s
        await asyncio.sleep(POLL_S)
    take_sample()
    evaluation = window.session.evaluation
    counts = {"runs": runs, "versions": sum(len(p.spec.versions) for p in window.grid.panes),
              "eval_cells": len(evaluation.cells) if evaluation else 0,
              "eval_cells_finished": sum(c.finished for c in evaluation.cells) if evaluation else 0,
              "autosaves": saver.encodes if saver else 0, "autosave_writes": saver.writes if saver else 0,
              "autosave_encode_ms_mean": saver.encode_seconds / saver.encodes * 1000 if saver and saver.encodes else 0}
    window.evals.stop()
    window.controller.stop_all()
    return counts


def measure_soak(plan, threads: int, sample, watch) -> dict:
    """Run the soak (`plan`: app/bench/soak.SoakPlan) in a fresh offscreen window; `sample(engine, qt_objects=…,
    session_file_mb=…)` takes a sample (app/bench/soak.Sampler) every `plan.interval_s`, `watch(engine)` reads
    the figures that change with every request every POLL_S. Returns what the window did (runs, versions,
    evaluation cells, autosaves)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import qasync
    from PySide6.QtCore import QSettings

    from app.models import default_model_path
    from app.ui.application import create_app
    from app.ui.bridge import EngineBridge
    from app.ui.settings import Settings
    from app.ui.window.main_window import MainWindow

    app = create_app()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp, loop:
        settings = Settings(QSettings(os.path.join(tmp, "soak.ini"), QSettings.IniFormat))
        window = MainWindow(EngineBridge(), settings, autosave_path=Path(tmp) / "autosave.chorus.json")
        window.resize(1600, 1000)
        window.show()
        try:
            return loop.run_until_complete(_soak(window, plan, str(default_model_path()), threads, Path(tmp),
                                                 sample, watch))
        finally:
            window.close()


def write_soak_png(result: dict, path: str, labels: dict[str, str]) -> None:
    """One small plot per series (`labels`: series name -> title), over minutes (pyqtgraph)."""
    import pyqtgraph as pg
    from pyqtgraph.exporters import ImageExporter
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    layout = pg.GraphicsLayoutWidget()
    layout.setBackground("w")
    layout.resize(1200, 900)
    minutes = [t / 60 for t in result["series"]["t_s"]]
    for i, (name, label) in enumerate(labels.items()):
        ratio = result["end_vs_start"][name]
        plot = layout.addPlot(row=i // 3, col=i % 3, title=f"{label}" + (f" — end ÷ start {ratio:.3f}"
                                                                         if ratio is not None else ""))
        plot.plot(minutes, result["series"][name], pen=pg.mkPen("#2563eb", width=2), symbol="o", symbolSize=4)
        plot.setLabel("bottom", "minutes")
        plot.getAxis("bottom").enableAutoSIPrefix(False)
        plot.showGrid(x=True, y=True, alpha=0.2)
    layout.show()  # the exporter reads the laid-out axes
    for _ in range(5):
        app.processEvents()
    exporter = ImageExporter(layout.scene())
    exporter.parameters()["width"] = 1200
    exporter.export(path)
