"""The stats panel on the real engine: it sees the batch fill up, rates, "–" before any, pause and reset."""

import numpy as np
from PySide6.QtWidgets import QLabel

from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def test_prefill_rate_is_a_dash_before_any_pure_prefill_step(loaded_window, loop):
    panel = loaded_window.stats_panel
    panel.update_once()
    assert panel.readouts["prefill"].text() == "–"  # as every empty readout (it read "N/A")
    assert panel.readouts["decode"].text() == "–"
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
    assert panel.readouts["prefill"].text() != "–"
    panel.reset_button.click()
    assert np.isnan(panel.active).all()
    panel.update_once()
    assert panel.readouts["prefill"].text() == "–" and panel.readouts["generated_total"].text() == "0"


def test_every_empty_readout_reads_a_dash():
    from app.engine import StatsSnapshot
    from app.ui.stats.readouts import values

    idle = StatsSnapshot(n_slots=4, active=0, queued=0, decode_tps=None, prefill_tps=None, avg_concurrent=None,
                         steps=0, decode_tokens=0, decode_time_s=0.0, prefill_tokens=0, prefill_time_s=0.0,
                         prompt_tokens_total=0, generated_tokens_total=0, completed=0, slot_context_used=[0] * 4,
                         n_ctx_per_slot=512)
    shown = values(idle)
    assert not any("N/A" in text for text in shown.values()), shown
    assert {key: shown[key] for key in ("decode", "prefill", "concurrency", "hit_rate")} == dict.fromkeys(
        ("decode", "prefill", "concurrency", "hit_rate"), "–")


def test_readouts_keep_a_fixed_size_and_widen_for_long_values(qapp):
    """Fixed-size values repaint without re-laying-out the dock; a value too long for them widens its label."""
    from app.engine import StatsSnapshot
    from app.ui.stats.panel import StatsPanel

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
    from app.ui.stats.panel import BUSY_ACTIVE, StatsPanel

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


# --- every readout states its window, and the windowed ones go quiet when the work ends -------------------------
class Clock:
    """The panel's and the recorder's clock, moved by the test: an idle minute without waiting one."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_readouts_state_their_window_and_go_quiet_a_minute_after_the_work(qapp):
    """The engine's own recorder, driven through a burst of work and a minute of idle: the last-second figures
    read 0 (or – for a ratio) while the plots read 0; the lifetime ones keep their value and say they are
    lifetime. (Before: Decode 71.9 t/s, Prefill 173.5 t/s, Avg concurrent 2.71 a minute after all work.)"""
    from app.engine.stats import StatsRecorder
    from app.ui.stats.panel import StatsPanel

    clock = Clock()
    recorder = StatsRecorder(n_slots=4, n_ctx_per_slot=512, clock=clock)
    panel = StatsPanel(recorder.snapshot, clock=clock)
    panel.timer.stop()
    recorder.record_occupancy(3, 0, [40, 40, 40, 0])
    recorder.record_step(n_decode=0, n_prefill=120, seconds=0.5)  # a pure-prefill step: 240 t/s
    for _ in range(20):  # then 3 requests decode together, a step every 50 ms
        clock.now += 0.05
        recorder.record_step(n_decode=3, n_prefill=0, seconds=0.04)  # 75 t/s while decoding
        recorder.record_tokens(generated=3, completed=0)
        panel.update_once()
    shown = {key: label.text() for key, label in panel.readouts.items()}
    assert shown["decode_recent"] == "60.0 t/s" and shown["concurrency_recent"] == "3.00"  # 60 tokens in 1 s
    assert shown["decode"] == "75.0 t/s" and shown["prefill"] == "240.0 t/s" and shown["concurrency"] == "3.00"
    assert shown["slots"] == "3 / 4"

    recorder.record_occupancy(0, 0, [0] * 4)  # all work ends; a minute passes
    clock.now += 61
    panel.update_once()
    shown = {key: label.text() for key, label in panel.readouts.items()}
    assert panel.decode_rate[-1] == 0 and panel.prefill_rate[-1] == 0 and panel.active[-1] == 0  # the plots
    assert shown["decode_recent"] == "0.0 t/s" and shown["prefill_recent"] == "0.0 t/s"
    assert shown["concurrency_recent"] == "–" and shown["slots"] == "0 / 4" and shown["queued"] == "0"
    assert shown["decode"] == "75.0 t/s" and shown["concurrency"] == "3.00"  # lifetime means: kept, and labelled
    windows = panel.readout_grid.windows
    assert set(windows) == set(panel.readouts)  # every readout has a window
    assert {windows[k] for k in ("decode", "prefill", "concurrency", "generated_total")} == {"lifetime"}
    assert {windows[k] for k in ("decode_recent", "prefill_recent", "concurrency_recent")} == {"last 1 s"}
    headings = {label.text() for label in panel.readout_grid.findChildren(QLabel, "readoutWindow")}
    assert {"Now", "last 1 s", "lifetime", "Totals, lifetime"} <= headings
    panel.close()


def test_the_speculative_totals_read_drafted_and_accepted_or_a_dash(qtbot):
    """Lifetime totals from the engine's recorder: "–" until something is drafted, and again after a Reset."""
    from app.engine.stats import StatsRecorder
    from app.ui.stats.readouts import Readouts

    recorder = StatsRecorder(n_slots=2, n_ctx_per_slot=512)
    readouts = Readouts()
    qtbot.addWidget(readouts)
    label = readouts.labels["speculative"]
    recorder.record_draft(drafted=8, accepted=5)
    recorder.record_draft(drafted=1200, accepted=870)
    readouts.show_snapshot(recorder.snapshot())
    assert label.text() == "1,208 / 875" and readouts.windows["speculative"] == "lifetime"
    recorder.reset()
    readouts.show_snapshot(recorder.snapshot())
    assert label.text() == "–"



def test_the_image_totals_read_encoded_and_reused_or_a_dash(qtbot):
    """Lifetime image totals from the engine's recorder: "–" until a prompt has an image, and again after a
    Reset; four prompts on one image encoded once read 1 / 3."""
    from app.engine.stats import StatsRecorder
    from app.ui.stats.readouts import Readouts

    recorder = StatsRecorder(n_slots=4, n_ctx_per_slot=512)
    readouts = Readouts()
    qtbot.addWidget(readouts)
    label = readouts.labels["images"]
    readouts.show_snapshot(recorder.snapshot())
    assert label.text() == "–"
    recorder.record_images(in_prompts=1, encoded=1)
    recorder.record_images(in_prompts=3)
    readouts.show_snapshot(recorder.snapshot())
    assert label.text() == "1 / 3" and readouts.windows["images"] == "lifetime"
    recorder.reset()
    readouts.show_snapshot(recorder.snapshot())
    assert label.text() == "–"

def test_no_backend_blanks_the_readouts_instead_of_keeping_the_last_ones(qapp):
    from app.engine.stats import StatsRecorder
    from app.ui.stats.panel import StatsPanel

    recorder = StatsRecorder(n_slots=2, n_ctx_per_slot=512)
    recorder.record_step(n_decode=2, n_prefill=0, seconds=0.1)
    snapshots = [recorder.snapshot(), None]  # then the model is unloaded (or reloading)
    panel = StatsPanel(lambda: snapshots.pop(0))
    panel.timer.stop()
    panel.update_once()
    assert panel.readouts["decode"].text() == "20.0 t/s"
    panel.update_once()
    assert all(label.text() == "–" for label in panel.readouts.values())
    panel.close()


def test_active_slots_never_exceed_the_slots_and_followers_are_counted_apart(make_engine, qapp):
    """Two slots, three requests, two of them identical: the copy follows its twin without a slot, so the engine
    has 3 requests active in 2 slots. The plot's active slots stay at 2 and the readouts say 2 / 2 with 1
    coalesced. (Before: the plot rose to 3 above the slots line while the readout said 2 / 2.)"""
    from app.ui.stats.panel import StatsPanel
    from tests.conftest import ask

    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    seen = []  # real snapshots taken as steps end, while all three run
    engine.subscribe(lambda event: seen.append(engine.stats()) if event.tokens else None)
    twin = ask("Count from one to forty in words.", max_tokens=24, ignore_eos=True)
    handles = [engine.submit(r) for r in (twin, twin, ask("Name three birds.", max_tokens=24, ignore_eos=True))]
    [h.result(timeout=120) for h in handles]
    crowded = [s for s in seen if s.active > s.n_slots]
    assert crowded, "no step saw the three requests together"
    feed = list(crowded)
    panel = StatsPanel(lambda: feed.pop(0))
    panel.timer.stop()
    for _ in crowded:
        panel.update_once()
    assert np.nanmax(panel.active) == 2 == panel.slots_line.value()
    assert panel.readouts["slots"].text() == "2 / 2" and panel.readouts["following"].text() == "1"
    assert panel.readouts["coalesced"].text() == "1"
    panel.close()


def test_the_window_goes_quiet_after_its_runs(loaded_window, loop):
    """The real engine in the window: once a run ended and its second has passed, the last-second readouts read
    0 and –, as the plots do, while the lifetime mean keeps the run's rate."""
    panel = loaded_window.stats_panel
    pane = prepare(loaded_window, ["Name a bird."], max_tokens=16)[0]
    pane.run()
    wait_until(loop, lambda: not pane.busy)
    bridge = loaded_window.bridge  # then wait for its one-second window to pass
    wait_until(loop, lambda: bridge.stats(panel.backend).recent_decode_tps == 0, timeout=30)
    panel.update_once()
    assert panel.readouts["decode_recent"].text() == "0.0 t/s" and panel.decode_rate[-1] == 0
    assert panel.readouts["concurrency_recent"].text() == "–"
    assert panel.readouts["slots"].text() == "0 / 4" and panel.active[-1] == 0
    assert panel.readouts["decode"].text().endswith("t/s") and panel.readouts["decode"].text() != "0.0 t/s"


def test_the_curves_names_sit_in_the_titles_not_over_the_newest_samples(qapp):
    """The newest samples are drawn at a plot's right edge, where the legend used to sit over them."""
    from app.ui.stats.panel import StatsPanel

    panel = StatsPanel(lambda: None)
    panel.timer.stop()
    panel.resize(420, 760)
    panel.show()
    for plot, names in ((panel.occupancy_plot, ("active slots", "queued")), (panel.rate_plot, ("decode", "prefill"))):
        item = plot.getPlotItem()
        data_area = item.getViewBox().sceneBoundingRect()
        assert item.legend is None or not item.legend.sceneBoundingRect().intersects(data_area)
        assert all(name in item.titleLabel.text for name in names)
        assert not item.titleLabel.sceneBoundingRect().intersects(data_area)
    panel.close()
