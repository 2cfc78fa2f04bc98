"""`python -m app bench --soak` in its smoke form (a few seconds, `--soak-seconds`): the contract's JSON, every
series sampled, and the plot. No figure is judged here: a soak of seconds measures nothing (docs/benchmarks.md)."""

import json
import subprocess
import sys

import pytest

from app.bench.soak import SERIES, Sampler, end_vs_start, tracked_objects
from tests.conftest import TEST_THREADS


@pytest.mark.timeout(900)  # a hang guard: the window, the model and an evaluation of 4 cells beside 2 panes
def test_a_short_soak_writes_the_contract_and_fills_every_series(tmp_path):
    out, png = tmp_path / "soak.json", tmp_path / "soak.png"
    run = subprocess.run([sys.executable, "-m", "app", "bench", "--soak", "--soak-seconds", "3", "--json", str(out),
                          "--png", str(png), "--threads", str(TEST_THREADS)], capture_output=True, text=True,
                         timeout=850, env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert run.returncode == 0, run.stderr[-2000:]
    soak = json.loads(out.read_text())["soak"]
    assert soak["minutes"] > 0 and soak["rss_end_vs_start"] > 0 and soak["decode_end_vs_start"] is not None
    series = soak["series"]
    samples = len(series["t_s"])
    assert samples >= 3 and set(SERIES) <= set(series)
    for name in SERIES:  # a value per sample, and each resource seen (the decode rate once tokens came)
        assert len(series[name]) == samples and max(series[name]) > 0, name
    assert set(soak["end_vs_start"]) == set(SERIES)
    assert len(series["versions"]) == samples and series["versions"][-1] >= 4  # what the resources grow with
    work = soak["work"]
    assert work["versions"] >= 4 and work["eval_cells_finished"] == work["eval_cells"] == 4 and work["autosaves"]
    assert "end ÷ start" in run.stdout and png.stat().st_size > 0


def test_the_heap_count_counts_what_the_collector_tracks():
    import gc

    kept = [[] for _ in range(5000)]  # 5,000 more tracked objects
    before = tracked_objects()
    assert abs(before - len(gc.get_objects())) < 50
    del kept
    assert before - tracked_objects() >= 5000 - 50


def test_end_vs_start_compares_the_thirds_after_the_warm_up():
    series = {"t_s": [0, 1, 2, 3, 4, 5, 6], **{name: [9, 100, 1, 1, 2, 2, 2] for name in SERIES}}
    ratios = end_vs_start(series, warmup_s=1)  # samples 1..6 (t ≥ 1, the first never): starts 100, 1; ends 2, 2
    assert ratios["rss_mb"] == pytest.approx(2 / 50.5)
    assert end_vs_start({"t_s": [0, 1], **{n: [1, 1] for n in SERIES}}, 0)["rss_mb"] is None  # one sample


def test_the_closing_samples_rates_over_a_fraction_of_an_interval_are_left_out():
    """The soak samples once more as its panes stop, 0.6 s after the last minute's sample: its decode rate over
    those 0.6 s (45 t/s against 200) counted in the last third and read as a fall of the decode rate."""
    series = {"t_s": [0, 60, 120, 180, 240, 300, 360, 360.6],
              **{n: [1, 100, 100, 100, 100, 100, 100, 100] for n in SERIES}}
    series["decode_tps"] = [0, 200, 200, 200, 200, 200, 200, 45]
    assert end_vs_start(series, warmup_s=60, interval_s=60)["decode_tps"] == pytest.approx(1.0)
    assert end_vs_start(series, warmup_s=60)["decode_tps"] < 0.9  # without the interval, as before
    assert end_vs_start(series, warmup_s=60, interval_s=60)["rss_mb"] == pytest.approx(1.0)  # levels keep it


def test_bench_panes_hands_the_window_the_made_up_session_and_writes_its_figures(tmp_path):
    """The window's part (app/ui/bench_panes.py, minutes at 256 panes: not run here) gets the benchmark's
    made-up session and replies, and its figures go to the JSON under "panes"."""
    import argparse

    from app.bench.cli import run_panes_bench
    from app.bench.versions import made_up_reply, session_with_versions

    given = []

    def measure(*args):
        given.extend(args)
        return {"sweep_panes": 256}
    out = tmp_path / "panes.json"
    assert run_panes_bench(argparse.Namespace(json=str(out)), measure, lambda r: "shown") == 0
    assert given == [session_with_versions, made_up_reply]
    assert json.loads(out.read_text())["panes"] == {"sweep_panes": 256}  # with the run's date and machine


def test_the_prompt_cache_is_sampled_as_its_mean_since_the_sample_before():
    """The prompt cache holds a slot's prompt from the time the slot frees until it is taken again: read at one
    instant a minute it was 0 or 1.4 MB, and the hour's thirds read 1.455 apart with no growth (2026-12-06). Its
    sample is the mean of the window's readings since the sample before; the resources read once stay as read."""
    sampler = Sampler()
    for mb in (0.0, 1.4, 1.4, 0.0):
        sampler.watch(prompt_cache_mb=mb, kv_cells=100 * mb)
    first = sampler.sample(0, open_files=3)
    sampler.watch(prompt_cache_mb=1.4, kv_cells=140)
    second = sampler.sample(10)
    assert (first["prompt_cache_mb"], first["kv_cells"]) == (pytest.approx(0.7), pytest.approx(70))
    assert (second["prompt_cache_mb"], second["kv_cells"]) == (1.4, 140)  # the readings since the first only
    assert sampler.series["prompt_cache_mb"] == [pytest.approx(0.7), 1.4] and first["open_files"] == 3
