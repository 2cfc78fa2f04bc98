"""`bench --gui` (app/__main__.py hands it to the benchmark): what the window costs. 16 panes (`--gui-panes N`:
N, on min(N, the slots' limit) slots) stream through the real MainWindow (offscreen) and the same requests run
headless on an identical engine; also the GUI event loop's
lag, the stats panel's update time and the autosave's time on the GUI thread (it encodes there; a worker writes).

Greedy requests make both runs do exactly the same work, so throughput is comparable token for token. Both runs
time the engine the same way, from the first submit to the step that finished the last request (a FinishClock
subscribed to the engine), so the window's own delay in showing "done" is reported apart, as `ui_done_lag_ms`.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from app.backends.workload import median, percentile
from app.engine import Engine, EngineConfig, limits
from app.session.conversation import plan_run

PANES = 16
# The lag probe is the measurement's own GUI work, taken from the model's CPU like the window's: 50 Hz costs
# about half of 100 Hz (~0.2% of a core) and still gives ~500 samples a run for a p99 against a 50 ms goal.
PROBE_MS = 20
PROMPTS = ["Write a short story about a lighthouse.", "Explain photosynthesis.", "List ten fruits.",
           "Describe a busy market.", "Write a poem about snow.", "How do airplanes fly?",
           "Give tips for a job interview.", "Describe the moon to a child."]


class FinishClock:
    """An engine subscriber (runs on the engine thread) noting when the last of `expected` requests finished."""

    def __init__(self, expected: int):
        self.remaining = expected
        self.finished_at: float | None = None

    def __call__(self, event) -> None:
        self.remaining -= len(event.finished)
        if self.remaining <= 0 and self.finished_at is None:
            self.finished_at = time.perf_counter()


def slots_for(panes: int) -> int:
    return min(panes, int(limits.SLOTS.high))


def _headless_rate(requests, threads: int) -> float:
    config = EngineConfig(model_path=requests[0][0], n_slots=slots_for(len(requests)), n_ctx_per_slot=512,
                          n_threads=threads)
    with Engine(config) as engine:
        clock = FinishClock(len(requests))
        engine.subscribe(clock)
        started = time.perf_counter()
        handles = [engine.submit(r) for _, r in requests]
        tokens = sum(h.result(timeout=600).generated_tokens for h in handles)
        return tokens / (clock.finished_at - started)


def _window_requests(window, model_path: str, panes: int) -> list:
    """Give the window `panes` greedy panes (once) and return what running them submits, as (model, request)."""
    while len(window.grid.panes) < panes:
        window.grid.add_pane()
    for i, pane in enumerate(window.grid.panes):
        pane.prompt.setPlainText(f"{PROMPTS[i % len(PROMPTS)]} (variant {i})")
        pane.sampling.temperature.setValue(0.0)
        pane.sampling.max_tokens.setValue(96)
    requests = []
    for pane in window.grid.panes:
        pane.commit_form()
        requests.append((model_path, plan_run(pane.spec)[0]))
    return requests


async def _gui_run(window, model_path: str, threads: int, panes: int) -> dict:
    from PySide6.QtCore import QTimer

    from app.ui import settings as keys

    window.settings.set(keys.SLOTS, slots_for(panes))
    window.settings.set(keys.CONTEXT_PER_SLOT, 512)
    window.settings.set(keys.THREADS, threads)
    await window.load_model(model_path)
    requests = _window_requests(window, model_path, panes)
    window.columns_box.setValue(4)  # as a user would, so the toolbar agrees

    lags, last = [], [time.perf_counter()]
    probe = QTimer(interval=PROBE_MS)

    def tick() -> None:  # how late each timer tick fires = how long the event loop was busy
        now = time.perf_counter()
        lags.append(max(0.0, now - last[0] - PROBE_MS / 1000))
        last[0] = now

    probe.timeout.connect(tick)
    panel = window.stats_panel
    update_ms = []
    original_update = panel.update_once

    def timed_update() -> None:
        original_update()
        update_ms.append(panel.last_update_ms)

    panel.timer.timeout.disconnect()
    panel.timer.timeout.connect(timed_update)
    probe.start()
    all_done = asyncio.Event()  # a signal, not polling: a polling loop would add GUI work of its own
    window.runner.events.idle.connect(all_done.set)
    clock = FinishClock(panes)
    unsubscribe: Callable[[], None] = window.bridge.main.subscribe(clock)
    saver = window.files.saver  # the autosave: it encodes on the GUI thread, a worker writes
    saves_before, encode_before = saver.encodes, saver.encode_seconds
    started, cpu_started = time.perf_counter(), time.thread_time()  # this coroutine runs on the GUI thread
    # Run all from the event loop, as the user's click runs it: inside this task run_sliced would do every step
    # at once (app/ui/widgets/sliced.py), and the stall measured would be the bench's, not the window's
    QTimer.singleShot(0, window.run_all)
    await all_done.wait()
    shown = time.perf_counter()
    gui_cpu = time.thread_time() - cpu_started
    probe.stop()
    unsubscribe()
    tokens = sum(p.tokens for p in window.grid.panes)
    saves, encode_s = saver.encodes - saves_before, saver.encode_seconds - encode_before
    return {"requests": requests, "autosaves": saves, "autosave_encode_ms": encode_s / saves * 1000 if saves else 0.0,
            "autosave_gui_share": encode_s / (shown - started), "gui_tps": tokens / (clock.finished_at - started),
            "gui_thread_cpu_share": gui_cpu / (shown - started),
            "ui_done_lag_ms": (shown - clock.finished_at) * 1000,
            "lag_p99_ms": percentile(lags, 99) * 1000,
            "lag_max_ms": max(lags) * 1000, "panel_update_median_ms": median(update_ms),
            "panel_update_p99_ms": percentile(update_ms, 99)}


def measure_gui(threads: int, repetitions: int, panes: int = PANES) -> dict:
    """`repetitions` window/headless pairs, alternating which run goes first (app/bench/cli.Plan.window_pairs)."""
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
    runs, headless = [], []
    with tempfile.TemporaryDirectory() as tmp, loop:
        for rep in range(repetitions):  # interleaved pairs, alternating which goes first (drift hits both sides)
            settings = Settings(QSettings(os.path.join(tmp, "b.ini"), QSettings.IniFormat))
            window = MainWindow(EngineBridge(), settings, autosave_path=Path(tmp) / "autosave.chorus.json")
            window.resize(1600, 1000)
            if rep % 2:  # the requests are the window's; made without running, then headless first
                requests = _window_requests(window, str(default_model_path()), panes)
                headless.append(_headless_rate(requests, threads))
            window.show()
            runs.append(loop.run_until_complete(_gui_run(window, str(default_model_path()), threads, panes)))
            window.close()
            requests = runs[-1].pop("requests")
            if not rep % 2:
                headless.append(_headless_rate(requests, threads))
    gui = {key: median([run[key] for run in runs]) for key in runs[0]}
    gui["lag_max_ms"] = max(run["lag_max_ms"] for run in runs)
    gui["headless_tps"] = median(headless)
    pairs = [run["gui_tps"] / rate for run, rate in zip(runs, headless, strict=True)]
    gui["gui_vs_headless"] = median(pairs)  # paired, as reproducible_throughput_ratio: each pair shares a moment
    gui["gui_vs_headless_of_medians"] = gui["gui_tps"] / gui["headless_tps"]
    gui["panes"], gui["slots"] = panes, slots_for(panes)
    gui["samples"] = {"gui_tps": [r["gui_tps"] for r in runs], "headless_tps": headless, "pair_ratios": pairs}
    return gui
