"""Tools → Scaling test in the window: it stops the window's engine, measures, reloads, and applies the knee."""

from app.ui import settings as keys
from tests.ui.conftest import wait_until


def test_the_scaling_test_runs_charts_and_applies_its_knee(loaded_window, loop):
    dialog = loaded_window.open_scaling()
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
    wait_until(loop, lambda: loaded_window.bridge.engine.config.n_slots == dialog.knee.concurrent, timeout=30)
