"""`bench --panes` (app/__main__.py hands it to the benchmark): what the window's own work costs on the GUI thread
at scale, with no model (replies are made-up text, as app/bench/versions.py's):
- a sweep that builds 256 panes in one action (4 temperatures × 4 seeds × 4 top-k × 4 min-p), until the grid has
  laid them out;
- at 256 panes with replies: the autosave's part on the GUI thread (first and next), opening the saved session,
  the comparison table and the diff view opened;
- a session with 1,000 versions (bench --versions'): opening it in a new window's session, its first autosave,
  the table.
Every figure is the wall time of the call on the GUI thread (it returns when its work is done) and, beside it as
`…_stall_s`, the longest the GUI thread went without handling events meanwhile: the stall a user sees (an open
reads its file on a worker while the window goes on, so its wall time is longer than its stall). Also the GUI
thread's share of a core while replies stream into all 256 panes (made-up text at a steady rate, as the runner's
pump applies it), with the grid scrolled to the middle. The goal for each stall is under 50 ms.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

SWEEP = {"temperature": [0.2, 0.5, 0.8, 1.1], "seed": [1, 2, 3, 4], "top_k": [10, 20, 40, 80],
         "min_p": [0.0, 0.05, 0.1, 0.2]}


PROBE_MS = 5  # the stall probe's period
WATCH = None  # a profiler's hook (scripts/probes/2026-12-05-window-stalls.py): WATCH(name, ticks, wall) at a call's
# start (wall None, ticks growing as the probe fires) and at its end


def _timed(app, fn, *args, stalls: dict | None = None, name: str = "", **kwargs) -> tuple[float, object]:
    """Seconds `fn` and the events it posted (layout, painting) take on this (the GUI) thread; what was pending
    before is handled first, untimed. `stalls[name]`: the longest gap between the ticks of a PROBE_MS timer
    meanwhile (the longest the event loop was held)."""
    from PySide6.QtCore import QTimer

    app.processEvents()
    ticks = [time.perf_counter()]
    probe = QTimer(interval=PROBE_MS)
    probe.timeout.connect(lambda: ticks.append(time.perf_counter()))
    probe.start()
    if WATCH is not None:
        WATCH(name, ticks, None)
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    app.processEvents()
    wall = time.perf_counter() - started
    returned = len(ticks)
    while len(ticks) == returned:  # the tick after the call: its gap counts the call's last stretch
        app.processEvents()
    probe.stop()
    if WATCH is not None:
        WATCH(name, ticks, wall)
    if stalls is not None:
        stalls[f"{name}_stall_s"] = max(b - a for a, b in zip(ticks, ticks[1:], strict=False))
    return wall, value


def _streaming_share(app, window, seconds: float = 4.0, rate_hz: float = 8.0) -> float:
    """The GUI thread's CPU share (time.thread_time per wall second) while every pane's reply grows a few words
    `rate_hz` times a second, as the run pump applies engine steps; the grid scrolled to the middle."""
    from app.session import RunState

    panes = list(window.session.panes)
    bar = window.grid.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    for pane in panes:
        pane.result.stream(text="", state=RunState.GENERATING)
    for _ in range(20):
        app.processEvents()
    from PySide6.QtCore import QEventLoop, QTimer

    step = [0]

    def grow() -> None:  # the pump's work for one merge of engine steps
        step[0] += 1
        for pane in panes:
            pane.result.stream(text=pane.result.text + f"word{step[0]} and more ")

    pump = QTimer(interval=int(1000 / rate_hz))
    pump.timeout.connect(grow)
    idle = QEventLoop()
    started, cpu = time.perf_counter(), time.thread_time()
    pump.start()
    QTimer.singleShot(int(seconds * 1000), idle.quit)
    idle.exec()  # waits for events without spinning: what runs is the window's own work
    pump.stop()
    share = (time.thread_time() - cpu) / (time.perf_counter() - started)
    for pane in panes:
        pane.result.stream(state=RunState.DONE)
    return share


def _fill_replies(session, made_up_reply, tokens: int = 120) -> None:
    """A finished made-up reply in every pane (as a run would leave it), through versions like a run's."""
    import random

    from app.session import versions

    rng = random.Random(0)
    for pane in session.panes:
        result = made_up_reply(rng, tokens, False)
        versions.begin(pane, [{"role": "user", "content": pane.draft or "Hi"}], result)
        pane.result = result


def measure_panes(session_with_versions, made_up_reply) -> dict:
    """`session_with_versions(count)` and `made_up_reply(rng, tokens, logprobs)` are the benchmark's
    (app/bench/versions.py), handed over by it."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings

    from app.session import sweep
    from app.ui.application import create_app
    from app.ui.bridge import EngineBridge
    from app.ui.settings import Settings
    from app.ui.window.main_window import MainWindow

    app = create_app()
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(QSettings(os.path.join(tmp, "panes.ini"), QSettings.IniFormat))
        window = MainWindow(EngineBridge(), settings, autosave_path=Path(tmp) / "autosave.chorus.json")
        window.resize(1600, 1000)
        window.show()
        app.processEvents()
        try:
            view = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
            view.prompt.setPlainText("Tell me about lighthouses.")
            view.commit_form()
            specs = sweep.expand(view.spec, SWEEP)
            out["sweep_panes"] = len(specs)
            stalls: dict = {}
            out["sweep_build_s"], _ = _timed(app, window.compare.add_variants, view, specs, run=False,
                                             stalls=stalls, name="sweep_build")
            _fill_replies(window.session, made_up_reply)
            saver = window.files.saver
            before = saver.encode_seconds
            out["autosave_first_s"], _ = _timed(app, window.files.autosave, wait=False, stalls=stalls,
                                                name="autosave_first")  # as the timer's: the
            saver.flush()  # write is the worker's, not the GUI thread's
            out["autosave_encode_first_s"] = saver.encode_seconds - before
            before = saver.encode_seconds
            out["autosave_next_s"], _ = _timed(app, window.files.autosave, wait=False, stalls=stalls,
                                               name="autosave_next")
            saver.flush()
            out["autosave_encode_next_s"] = saver.encode_seconds - before
            path = Path(tmp) / "panes.chorus.json"
            window.session.save(path)
            out["session_mb_256"] = path.stat().st_size / 1e6
            window.files.unsaved = False
            out["open_256_s"], _ = _timed(app, window.files.open, str(path), stalls=stalls, name="open_256")
            out["table_256_s"], table = _timed(app, window.compare.open_table, stalls=stalls, name="table_256")
            table.close()
            panes = window.session.panes
            out["diff_256_s"], diff = _timed(app, window.compare.open_diff, panes[0], panes[-1], stalls=stalls,
                                            name="diff_256")
            diff.close()
            out["streaming_256_gui_share"] = _streaming_share(app, window)
            versions_path = Path(tmp) / "versions.chorus.json"
            session_with_versions(1000).save(versions_path)
            out["versions_mb"] = versions_path.stat().st_size / 1e6
            window.files.unsaved = False
            window.files.new()  # the 256 panes go first, untimed: the open below builds its 10 panes only
            window.files.unsaved = False
            out["open_versions_s"], _ = _timed(app, window.files.open, str(versions_path), stalls=stalls,
                                              name="open_versions")
            before = saver.encode_seconds
            out["autosave_versions_first_s"], _ = _timed(app, window.files.autosave, wait=False, stalls=stalls,
                                                         name="autosave_versions_first")
            saver.flush()
            out["autosave_encode_versions_first_s"] = saver.encode_seconds - before
            out["table_versions_s"], table = _timed(app, window.compare.open_table, stalls=stalls,
                                                   name="table_versions")
            table.close()
            out.update(stalls)
        finally:
            window.files.unsaved = False
            window.close()
    return out


def describe_panes(result: dict) -> str:
    ms = {k: v * 1000 for k, v in result.items() if k.endswith("_s")}

    def fig(key: str) -> str:
        return f"{ms[key + '_s']:.0f} ms (stall {ms[key + '_stall_s']:.0f})"

    return (f"Window at scale (GUI thread, goal: stalls < 50 ms): a sweep building {result['sweep_panes']} panes "
            f"{fig('sweep_build')} (goal ≤ 2 s); at 256 panes: autosave {fig('autosave_first')} the first time "
            f"({ms['autosave_encode_first_s']:.0f} encoding), {fig('autosave_next')} next; opening the session "
            f"({result['session_mb_256']:.1f} MB) {fig('open_256')}; the comparison table {fig('table_256')}; "
            f"the diff view {fig('diff_256')}; replies streaming into all 256 panes: GUI thread "
            f"{result['streaming_256_gui_share']:.0%} of a core (goal ≤ 15 %). 1,000 versions "
            f"({result['versions_mb']:.1f} MB): open {fig('open_versions')}, first autosave "
            f"{fig('autosave_versions_first')} ({ms['autosave_encode_versions_first_s']:.0f} encoding), "
            f"table {fig('table_versions')}")
