"""Tools → Scaling test in the window: it stops the window's engine, measures, reloads, and applies the knee."""

from app.ui import settings as keys
from tests.ui.conftest import wait_until


def test_the_scaling_test_runs_charts_and_applies_its_knee(loaded_window, loop):
    dialog = loaded_window.models.open_scaling()
    dialog.max_box.setValue(2)
    task = dialog.start()
    loop.run_until_complete(task)
    assert [lv.concurrent for lv in dialog.levels] == [1, 2]
    assert "concurrent" in dialog.table.text() and dialog.summary.text().startswith(("Beyond", "Up to"))
    assert dialog.plot.getPlotItem().listDataItems()  # the chart has its curves
    assert loaded_window.bridge.ready  # the window's model is back
    assert dialog.apply_button.isEnabled() and dialog.apply_button.text() == f"Apply {dialog.knee.concurrent} slots"
    reload = dialog.apply()
    if reload is not None:
        loop.run_until_complete(reload)
    assert loaded_window.settings.get(keys.SLOTS) == dialog.knee.concurrent
    wait_until(loop, lambda: (main := loaded_window.bridge.main) is not None
               and main.config.n_slots == dialog.knee.concurrent, timeout=30)


def test_a_failed_scaling_test_keeps_its_error_on_screen(window, loop, model_path, tmp_path, settings):
    """Before the fix the failure was replaced at once by "No measurements."."""
    import shutil

    settings.set(keys.THREADS, 1)
    copy = tmp_path / "copy.gguf"
    shutil.copy(model_path, copy)
    assert loop.run_until_complete(window.load_model(str(copy))) is not None
    dialog = window.models.open_scaling()
    dialog.max_box.setValue(2)
    copy.unlink()  # the model file goes away: the test's own engine cannot load it
    loop.run_until_complete(dialog.start())
    assert dialog.summary.text().startswith("The scaling test failed:"), dialog.summary.text()
    assert "No measurements" not in dialog.summary.text() and not dialog.apply_button.isEnabled()
