"""The window renders one evented session: the runner alone drives what it shows, the table never goes stale,
pane numbers are stable, a damaged autosave never stops a launch, a slow engine close loses no run's end."""

import json
import os
import subprocess
import sys
from pathlib import Path

from app.engine import SamplingParams
from app.session import PaneSpec, Session, sweep
from app.session.autosave import AUTOSAVE_NAME, DATA_DIR_ENV
from tests.fixtures.step_gate import held_steps
from tests.ui.conftest import wait_until

ROOT = Path(__file__).resolve().parents[2]
GREEDY = SamplingParams(temperature=0)


def test_the_runner_alone_updates_the_panes_the_table_and_the_stats(loaded_window, loop):
    """No widget is touched: specs are added through the controller and run through the runner."""
    window = loaded_window
    controller, runner = window.controller, window.runner
    specs = [controller.add_pane(PaneSpec(draft=f"Name a {thing}.", sampling=GREEDY, max_tokens=16))
             for thing in ("fruit", "river", "planet")]
    table = window.compare.open_table()
    assert [row["finish"] for row in table.rows()][-3:] == ["idle"] * 3
    for spec in specs:
        runner.run(spec)
    wait_until(loop, lambda: runner.active == 0)
    views = [window.grid.view_of(spec) for spec in specs]
    assert all(v is not None and v.output.toPlainText().strip().endswith(s.result.text.strip())
               for v, s in zip(views, specs, strict=True))
    assert all("finish:" in v.status.text() for v in views)
    finish = table.columns.index("finish")
    wait_until(loop, lambda: [table.cell(r, finish) for r in range(table.model.rowCount())][-3:]
               == [s.result.finish_reason for s in specs], timeout=10)
    wait_until(loop, lambda: window.stats_panel.readouts["generated_total"].text() not in ("–", "0"), timeout=10)


def test_the_comparison_table_follows_a_running_sweep(loaded_window, loop):
    """Before the redesign, rows of panes that had finished still read "generating" until it was reopened."""
    window = loaded_window
    base = window.grid.panes[0]
    base.prompt.setPlainText("Write one sentence about the sea.")
    base.sampling.temperature.setValue(0.7)
    base.sampling.max_tokens.setValue(24)
    variants = window.compare.add_variants(base, sweep.seeds(base.spec, 3), run=False)
    table = window.compare.open_table(base.spec)
    with held_steps(window) as gate:  # a step per look: the rows are seen generating however fast the machine
        assert window.compare.run_group(base) == 4
        wait_until(loop, lambda: any(r["finish"] == "generating" for r in table.rows()) or gate.allow(), timeout=60)
    wait_until(loop, lambda: not any(v.busy for v in [base, *variants]))
    finish = table.columns.index("finish")
    wait_until(loop, lambda: all(table.cell(r, finish) in ("stop", "length")
                                 for r in range(table.model.rowCount())), timeout=10)
    assert table.model.rowCount() == 4


def test_pane_numbers_survive_removal_save_and_restore(window, tmp_path):
    first, second = window.grid.panes[:2]
    window.grid.remove_pane(first)
    third = window.grid.add_pane()
    assert [v.spec.number for v in window.grid.panes] == [2, 3]
    assert third.header.title.text().startswith("Pane 3")
    path = tmp_path / "numbers.chorus.json"
    window.files.save_as(path)
    back = Session.load(path)
    assert [p.number for p in back.panes] == [2, 3] and back.next_number == 4
    window.files.open(str(path))
    assert [v.header.title.text().split("  ")[0] for v in window.grid.panes] == ["Pane 2", "Pane 3"]
    assert window.grid.add_pane().spec.number == 4  # never reused


def _launch_with_autosave(tmp_path, content: str) -> tuple[subprocess.CompletedProcess, Path]:
    data = tmp_path / "data"
    data.mkdir(parents=True)
    (data / AUTOSAVE_NAME).write_text(content, encoding="utf-8")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    env[DATA_DIR_ENV] = str(data)
    run = subprocess.run([sys.executable, "-m", "app", "--print-restored"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    return run, data


def test_a_damaged_autosave_never_stops_a_launch(tmp_path):
    """Before the fix `view.columns: null` or a string made every launch exit with a TypeError (and the file
    stayed, so the next launch crashed again)."""
    head = '{"format": "chorus-session", "version": 1, "view": {"columns": '
    pane = '"panes": [{"title": "Kept", "draft": "hello"}]}'
    run, data = _launch_with_autosave(tmp_path / "null", f"{head}null}}, {pane}")
    assert run.returncode == 0, run.stderr[-2000:]
    restored = json.loads(run.stdout.strip().splitlines()[-1])
    assert restored["message"] is None and [p["title"] for p in restored["panes"]] == ["Kept"]  # columns: default
    run, data = _launch_with_autosave(tmp_path / "text", f'{head}"three"}}, {pane}')
    assert run.returncode == 0, run.stderr[-2000:]
    restored = json.loads(run.stdout.strip().splitlines()[-1])
    assert "could not be restored" in restored["message"] and "view, columns" in restored["message"]
    assert list(data.glob(f"{AUTOSAVE_NAME}.unreadable-*"))  # kept, never deleted
    assert not (data / AUTOSAVE_NAME).exists() or json.loads((data / AUTOSAVE_NAME).read_text())["version"] == 2


def test_a_slow_engine_close_still_ends_the_runs_it_cancels(loaded_window, loop, model_path, settings):
    """Before the fix the bridge unsubscribed when Engine.close() gave up after 2 s: the cancelled runs' ends were
    never heard and their panes stayed "running" (Run then refused them)."""
    import time

    window = loaded_window
    engine = window.bridge.main.engine
    real_decode = engine._step.decode

    def slow_decode(*args, **kwargs):  # one step takes longer than close() waits (a big model prefilling)
        time.sleep(3)
        return real_decode(*args, **kwargs)

    view = window.grid.panes[0]
    view.prompt.setPlainText("Write a long story about a lighthouse.")
    view.sampling.max_tokens.setValue(400)
    with held_steps(window) as gate:  # the run is still going when the decode slows, however fast the machine
        assert view.run()
        wait_until(loop, lambda: view.tokens >= 2 or gate.allow())
        engine._step.decode = slow_decode
    loop.run_until_complete(window.load_model(str(model_path)))  # a reload retires the engine mid-step
    wait_until(loop, lambda: not view.busy, timeout=60)
    assert view.state.value == "cancelled" and view.spec.result.text
    assert view.run(use_draft=False)  # the pane runs again


def test_a_dead_engine_is_reported_with_a_reload_that_works(loaded_window, loop, model_path):
    """Before: an engine thread that died left requests that never ran and a window that said nothing."""
    from tests.engine.test_faults import inject_snapshot_fault

    window = loaded_window
    view = window.grid.panes[0]
    view.prompt.setPlainText("Write a long story about a ship.")
    view.sampling.max_tokens.setValue(200)
    with held_steps(window) as gate:  # the run is still going when the fault comes, however fast the machine
        assert view.run()
        wait_until(loop, lambda: view.tokens >= 1 or gate.allow())
        inject_snapshot_fault(window.bridge.main.engine).set()
    wait_until(loop, lambda: not view.busy)
    assert view.state.value == "error" and "reload the model" in view.spec.result.error
    wait_until(loop, lambda: any(m.startswith("The model stopped") for m in window.messages), timeout=10)
    assert not view.run(use_draft=False) and "stopped" in view.status.text()  # refused with the reason
    window.models.reload_button.click()
    wait_until(loop, lambda: window.bridge.main is not None and window.bridge.main.alive and not window.bridge.loading)
    assert view.run(use_draft=False)
    wait_until(loop, lambda: not view.busy)
    assert view.state.value == "done"


def test_a_pane_scrolled_out_of_view_catches_up_when_it_comes_back(loaded_window, loop):
    """Streamed text is not laid out for a pane no one can see (it cost the model CPU with 16 panes); scrolling
    back to it shows everything that arrived meanwhile, while it still streams."""
    window = loaded_window
    window.columns_box.setValue(1)
    window.resize(900, 600)
    far = [window.controller.add_pane(PaneSpec()) for _ in range(3)][-1]
    far.draft, far.sampling, far.max_tokens = "Write a poem about snow.", GREEDY, 600  # runs to the length limit
    view = window.grid.view_of(far)
    view.build()  # a pane seen before (one never seen is not built at all: test_lazy_panes.py)
    window.grid.verticalScrollBar().setValue(0)
    wait_until(loop, lambda: view.isVisible() and view.visibleRegion().isEmpty(), timeout=10)
    with held_steps(window) as gate:  # the engine waits while the test looks: the pane is still generating
        window.runner.run(far)
        wait_until(loop, lambda: far.result.busy and len(far.result.text) >= 40 or gate.allow())
        start = far.result.text[:40]
        assert start not in view.output.toPlainText()  # streamed while away: not rendered, not even its status
        assert view.status.text().startswith("queued")
        window.grid.ensureWidgetVisible(view.output)
        wait_until(loop, lambda: start in view.output.toPlainText() and view.status.text().startswith("generating"),
                   timeout=10)
    window.runner.cancel(far)
    wait_until(loop, lambda: not far.result.busy)
    assert view.output.toPlainText().strip().endswith(far.result.text.strip())


def test_the_column_count_is_kept_by_the_session_alone(qtbot, settings, loop, tmp_path):
    """It was kept twice: in the session's view and in QSettings (written on every change, read for a fresh
    window), so a fresh window took the last count of any session while File → New took the default. Now the
    session's view is the one copy: the settings never hold it, and a session reopens with its own."""
    from app.session import autosave
    from app.session.state import COLUMNS
    from app.ui.bridge import EngineBridge
    from app.ui.window.main_window import MainWindow

    settings.store.setValue("window/columns", 4)  # what an earlier version left behind: not read
    path = tmp_path / "autosave.chorus.json"
    first = MainWindow(EngineBridge(), settings, autosave_path=path)
    qtbot.addWidget(first)
    assert first.session.view.columns == COLUMNS.default == first.columns_box.value() == first.grid.columns
    first.columns_box.setValue(3)
    assert first.session.view.columns == 3 and first.grid.columns == 3
    first.controller.set_columns(1)  # the session changes it (as opening another session does): the box follows
    assert first.columns_box.value() == 1
    assert settings.store.value("window/columns") == 4 and not any("column" in k for k in
                                                                   set(settings.store.allKeys()) - {"window/columns"})
    assert first.files.autosave()
    first.close()
    restored = autosave.restore(path)
    second = MainWindow(EngineBridge(), settings, autosave_path=path, restored=restored)
    qtbot.addWidget(second)
    assert second.session.view.columns == 1 == second.columns_box.value() == second.grid.columns
    second.controller.replace(Session())  # File → New, without its question about the unsaved drafts
    assert second.session.view.columns == COLUMNS.default == second.columns_box.value()
    second.close()
