"""The stats panel on the real engine: it sees the batch fill up, rates, N/A, pause and reset."""

import numpy as np

from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def test_prefill_rate_is_na_before_any_pure_prefill_step(loaded_window, loop):
    panel = loaded_window.stats_panel
    panel.update_once()
    assert panel.readouts["prefill"].text() == "N/A"
    assert panel.readouts["decode"].text() == "N/A"
    assert panel.readouts["slots"].text() == "0 / 4"


def test_active_slots_reach_four_and_decode_rate_is_positive(loaded_window, loop):
    panel = loaded_window.stats_panel
    panes = prepare(loaded_window, [f"Write a paragraph about the number {i}." for i in range(4)], max_tokens=120)
    for pane in panes:
        pane.sampling.max_tokens.setValue(120)
    loaded_window.run_all()
    wait_until(loop, lambda: not any(p.busy for p in panes), timeout=120)
    panel.update_once()  # the timer's last tick may predate the final step
    assert np.nanmax(panel.active) == 4
    assert np.nanmax(panel.decode_rate) > 0
    assert panel.readouts["decode"].text().endswith("t/s")
    assert panel.readouts["prefill"].text().endswith("t/s")  # the first step prefilled alone
    assert int(panel.readouts["generated_total"].text().replace(",", "")) == sum(p.tokens for p in panes)
    assert panel.slots_line.value() == 4


def test_pause_stops_updates_and_resume_restarts_them(loaded_window, loop):
    panel = loaded_window.stats_panel
    panel.pause_button.setChecked(True)
    assert panel.paused and panel.pause_button.text() == "Resume"
    frozen = panel.updates
    pane = prepare(loaded_window, ["Name a bird."], max_tokens=8)[0]
    pane.run()  # the engine works and the loop runs while the panel is paused
    wait_until(loop, lambda: not pane.busy)
    assert panel.updates == frozen and not panel.timer.isActive()
    panel.pause_button.setChecked(False)
    wait_until(loop, lambda: panel.updates > frozen, timeout=5)


def test_reset_clears_plots_and_engine_counters(loaded_window, loop):
    panel = loaded_window.stats_panel
    pane = prepare(loaded_window, ["Name a bird."], max_tokens=8)[0]
    pane.run()
    wait_until(loop, lambda: not pane.busy)
    panel.update_once()
    assert panel.readouts["prefill"].text() != "N/A"
    panel.reset_button.click()
    assert np.isnan(panel.active).all()
    panel.update_once()
    assert panel.readouts["prefill"].text() == "N/A" and panel.readouts["generated_total"].text() == "0"


def test_readouts_keep_a_fixed_size_and_widen_for_long_values(qapp):
    """Fixed-size values repaint without re-laying-out the dock; a value too long for them widens its label."""
    from app.engine import StatsSnapshot
    from app.ui.stats_panel import StatsPanel

    huge = 123_456_789_012
    snap = StatsSnapshot(n_slots=16, active=16, queued=0, decode_tps=120.0, prefill_tps=300.0, avg_concurrent=15.5,
                         steps=huge, decode_tokens=huge, decode_time_s=1.0, prefill_tokens=0, prefill_time_s=0.0,
                         prompt_tokens_total=huge, generated_tokens_total=huge, completed=0,
                         slot_context_used=[0] * 16, n_ctx_per_slot=512)
    panel = StatsPanel(lambda: snap)
    panel.timer.stop()
    panel.show()
    panel.update_once()
    label = panel.readouts["generated_total"]
    assert label.text() == f"{huge:,}"
    assert label.minimumSize() == label.maximumSize()
    assert label.width() >= label.fontMetrics().horizontalAdvance(label.text())
    panel.close()


def test_a_rerun_reuses_the_prompt_and_the_pane_and_panel_say_so(loaded_window, loop):
    panel = loaded_window.stats_panel
    pane = prepare(loaded_window, ["Name a bird."], max_tokens=8)[0]
    for _ in range(2):
        pane.run()
        wait_until(loop, lambda: not pane.busy)
    result = pane.spec.result
    assert result.cached_tokens == result.prompt_tokens > 0  # the whole prompt came from the slot's cache
    assert f"{result.prompt_tokens}/{result.prompt_tokens} prompt tok cached" in pane.status.text()
    panel.update_once()
    assert int(panel.readouts["cached_total"].text().replace(",", "")) >= result.prompt_tokens
    assert panel.readouts["hit_rate"].text().endswith("%")


def test_a_busy_batch_halves_the_panels_rate_and_plots_every_other_sample(qapp):
    """Above BUSY_ACTIVE requests the panel's own GUI work is taken from the model's threads: it samples at half
    rate (readouts still move) and redraws its plots every other sample; a quiet batch gets the full rate back."""
    from app.engine import StatsSnapshot
    from app.ui.stats_panel import BUSY_ACTIVE, StatsPanel

    def snapshot(active: int) -> StatsSnapshot:
        return StatsSnapshot(n_slots=16, active=active, queued=0, decode_tps=100.0, prefill_tps=0.0,
                             avg_concurrent=float(active), steps=1, decode_tokens=active, decode_time_s=1.0,
                             prefill_tokens=0, prefill_time_s=0.0, prompt_tokens_total=0,
                             generated_tokens_total=active, completed=0, slot_context_used=[0] * 16,
                             n_ctx_per_slot=512)

    shown = [snapshot(BUSY_ACTIVE + 1)]
    panel = StatsPanel(lambda: shown[0])
    panel.show()
    redraws = []
    original = panel._redraw
    panel._redraw = lambda now: (redraws.append(now), original(now))
    quiet_interval = panel.timer.interval()
    for _ in range(4):
        panel.update_once()
    assert panel.timer.interval() == 2 * quiet_interval and len(redraws) == 2
    assert panel.readouts["slots"].text() == f"{BUSY_ACTIVE + 1} / 16"
    shown[0] = snapshot(1)
    panel.update_once()
    panel.update_once()
    assert panel.timer.interval() == quiet_interval and len(redraws) == 4
    del panel._redraw  # the wrapper holds the panel: left in place, pyqtgraph's items outlive their Python half
    panel.close()
