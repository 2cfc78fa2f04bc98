"""The two kinds of rate a StatsSnapshot carries, each with one definition (docs/engine.md, "Statistics"):
a mean since reset over the time spent on the work, and the tokens of the trailing window of wall clock."""

import pytest

from app.engine import limits
from app.engine.rates import WindowRate
from app.engine.stats import StatsRecorder
from tests.conftest import ask


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_window_rate_counts_the_trailing_window_of_wall_clock():
    rate = WindowRate(window_s=1.0)
    rate.add(10, now=0.2)
    rate.add(5, now=0.7)
    rate.add(0, now=0.8)  # nothing to count
    assert rate.rate(now=1.0) == 15.0  # both inside (0.0, 1.0]
    assert rate.rate(now=1.25) == 5.0  # the first fell out at 1.2
    assert rate.rate(now=1.7) == 0.0  # idle: zero one window after the last token
    rate.add(3, now=2.0)
    rate.clear()
    assert rate.rate(now=2.0) == 0.0
    assert WindowRate().window_s == limits.RATE_WINDOW_S  # declared once
    with pytest.raises(ValueError):
        WindowRate(window_s=0)


def test_the_recorder_keeps_the_mean_and_the_recent_rate_apart():
    clock = Clock()
    stats = StatsRecorder(n_slots=2, n_ctx_per_slot=256, clock=clock)
    stats.record_step(n_decode=0, n_prefill=30, seconds=0.1)  # a pure-prefill step
    stats.record_step(n_decode=2, n_prefill=0, seconds=0.05)
    stats.record_tokens(generated=2, completed=0)
    clock.now += 0.5
    stats.record_step(n_decode=2, n_prefill=4, seconds=0.1)  # mixed: feeds the decode mean only
    stats.record_tokens(generated=2, completed=0)
    snap = stats.snapshot()
    assert snap.decode_tps == pytest.approx(4 / 0.15) and snap.prefill_tps == pytest.approx(30 / 0.1)
    assert snap.recent_decode_tps == pytest.approx(4 / limits.RATE_WINDOW_S)
    assert snap.recent_prefill_tps == pytest.approx(34 / limits.RATE_WINDOW_S)
    clock.now += limits.RATE_WINDOW_S  # a window of idle wall clock later
    later = stats.snapshot()
    assert later.recent_decode_tps == 0.0 and later.recent_prefill_tps == 0.0
    assert later.decode_tps == snap.decode_tps  # the mean over decode time does not decay while idle
    stats.reset()
    assert stats.snapshot().decode_tps is None and stats.snapshot().recent_decode_tps == 0.0


def test_the_engine_reports_both_rates(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    handles = [engine.submit(ask(f"Count to {n}.", max_tokens=12, ignore_eos=True)) for n in (5, 9)]
    assert all(h.result(timeout=60).generated_tokens == 12 for h in handles)
    assert engine.wait_idle(30)
    snap = engine.stats()
    assert snap.decode_tps == pytest.approx(snap.decode_tokens / snap.decode_time_s)
    # Every generated token was counted in the recent rate too; at most all 24 are still inside the window.
    assert 0.0 <= snap.recent_decode_tps <= snap.generated_tokens_total / limits.RATE_WINDOW_S
    assert snap.generated_tokens_total == 24
