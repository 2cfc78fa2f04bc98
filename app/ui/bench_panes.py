"""`bench --panes` (app/__main__.py hands it to the benchmark): what the window's own work costs on the GUI thread
at scale, with no model (replies are made-up text, as app/bench/versions.py's):
- a sweep that builds 256 panes in one action (4 temperatures × 4 seeds × 4 top-k × 4 min-p), until the grid has
  laid them out;
- at 256 panes with replies: the autosave's part on the GUI thread (first and next), opening the saved session,
  the comparison table and the diff view opened;
- a session with 1,000 versions (bench --versions'): opening it in a new window's session, its first autosave,
  the table.
Every figure is wall time on the GUI thread (each call runs there and returns when its work is done), so it is
the stall a user sees. The goal for each is under 50 ms.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

SWEEP = {"temperature": [0.2, 0.5, 0.8, 1.1], "seed": [1, 2, 3, 4], "top_k": [10, 20, 40, 80],
         "min_p": [0.0, 0.05, 0.1, 0.2]}


def _timed(app, fn, *args, **kwargs) -> tuple[float, object]:
    """Seconds `fn` and the events it posted (layout, painting) take on this (the GUI) thread; what was pending
    before is handled first, untimed."""
    app.processEvents()
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    app.processEvents()
    return time.perf_counter() - started, value


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
            out["sweep_build_s"], _ = _timed(app, window.compare.add_variants, view, specs, run=False)
            _fill_replies(window.session, made_up_reply)
            saver = window.files.saver
            before = saver.encode_seconds
            out["autosave_first_s"], _ = _timed(app, window.files.autosave, wait=False)  # as the timer's: the
            saver.flush()  # write is the worker's, not the GUI thread's
            out["autosave_encode_first_s"] = saver.encode_seconds - before
            before = saver.encode_seconds
            out["autosave_next_s"], _ = _timed(app, window.files.autosave, wait=False)
            saver.flush()
            out["autosave_encode_next_s"] = saver.encode_seconds - before
            path = Path(tmp) / "panes.chorus.json"
            window.session.save(path)
            out["session_mb_256"] = path.stat().st_size / 1e6
            window.files.unsaved = False
            out["open_256_s"], _ = _timed(app, window.files.open, str(path))
            out["table_256_s"], table = _timed(app, window.compare.open_table)
            table.close()
            panes = window.session.panes
            out["diff_256_s"], diff = _timed(app, window.compare.open_diff, panes[0], panes[-1])
            diff.close()
            versions_path = Path(tmp) / "versions.chorus.json"
            session_with_versions(1000).save(versions_path)
            out["versions_mb"] = versions_path.stat().st_size / 1e6
            window.files.unsaved = False
            window.files.new()  # the 256 panes go first, untimed: the open below builds its 10 panes only
            window.files.unsaved = False
            out["open_versions_s"], _ = _timed(app, window.files.open, str(versions_path))
            before = saver.encode_seconds
            out["autosave_versions_first_s"], _ = _timed(app, window.files.autosave, wait=False)
            saver.flush()
            out["autosave_encode_versions_first_s"] = saver.encode_seconds - before
            out["table_versions_s"], table = _timed(app, window.compare.open_table)
            table.close()
        finally:
            window.files.unsaved = False
            window.close()
    return out


def describe_panes(result: dict) -> str:
    ms = {k: v * 1000 for k, v in result.items() if k.endswith("_s")}
    return (f"Window at scale (GUI thread, goal < 50 ms each): a sweep building {result['sweep_panes']} panes "
            f"{ms['sweep_build_s']:.0f} ms (goal ≤ 2 s); at 256 panes: autosave {ms['autosave_first_s']:.0f} ms "
            f"the first time ({ms['autosave_encode_first_s']:.0f} encoding), {ms['autosave_next_s']:.0f} ms next; "
            f"opening the session ({result['session_mb_256']:.1f} MB) {ms['open_256_s']:.0f} ms; the comparison "
            f"table {ms['table_256_s']:.0f} ms; the diff view {ms['diff_256_s']:.0f} ms. 1,000 versions "
            f"({result['versions_mb']:.1f} MB): open {ms['open_versions_s']:.0f} ms, first autosave "
            f"{ms['autosave_versions_first_s']:.0f} ms ({ms['autosave_encode_versions_first_s']:.0f} encoding), "
            f"table {ms['table_versions_s']:.0f} ms")
