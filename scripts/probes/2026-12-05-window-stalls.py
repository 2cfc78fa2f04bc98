"""What each stall of `bench --panes` is: the benchmark's own run (app/ui/bench_panes.py), each measured call's
probe ticks watched (`bench_panes.WATCH`), with
- the cyclic collector's passes (gc.callbacks: generation, duration, objects collected), each placed in the gap
  between probe ticks it fell in;
- a sampler thread that records the GUI thread's Python stack (sys._current_frames) every 2 ms while the probe
  timer has not ticked for 15 ms, so only the stalls are sampled.
For every measured call: its stall, then each gap over 30 ms with what ran in it (the collections, and the stack
lines sampled most often, innermost app frame first).

    PYTHONPATH=$PWD python scripts/probes/2026-12-05-window-stalls.py [--gap-ms 30] [--only NAME]
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.bench.versions import made_up_reply, session_with_versions  # noqa: E402
from app.ui import bench_panes  # noqa: E402

STATE = {"ticks": None, "gui": None, "gc": [], "samples": [], "spans": []}
TIMED = ("app.ui.widgets.sliced:_Turns.run", "app.ui.pane.grid:PaneGrid.settle",
         "app.ui.pane.grid:PaneGrid._delete_some", "app.ui.pane.grid:PaneGrid._check_widths",
         "app.ui.pane.grid:PaneGrid.refresh_titles", "app.ui.pane.prompt_pane:PromptPane.build",
         "app.session.controller:SessionController.add_pane")


def time_spans() -> None:
    """Each of TIMED's calls on the GUI thread, as (start, end, name)."""
    import importlib

    for target in TIMED:
        module, _, path = target.partition(":")
        owner_name, name = path.split(".")
        owner = getattr(importlib.import_module(module), owner_name)
        real = getattr(owner, name)

        def timed(*args, _real=real, _name=path, **kwargs):
            start = time.perf_counter()
            try:
                return _real(*args, **kwargs)
            finally:
                STATE["spans"].append((start, time.perf_counter(), _name))

        setattr(owner, name, timed)


def on_gc(phase: str, info: dict) -> None:
    if phase == "start":
        STATE["gc_start"] = time.perf_counter()
    elif STATE.get("gc_start") is not None:
        end = time.perf_counter()
        STATE["gc"].append((STATE["gc_start"], end, info["generation"], info["collected"],
                            threading.current_thread().name))
        STATE["gc_start"] = None


def sampler(stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(0.002)
        ticks, gui = STATE["ticks"], STATE["gui"]
        if not ticks or gui is None:
            continue
        now = time.perf_counter()
        if now - ticks[-1] < 0.015:
            continue
        frame = sys._current_frames().get(gui)
        stack = []
        while frame is not None:
            code = frame.f_code
            stack.append(f"{os.path.relpath(code.co_filename)}:{frame.f_lineno} {code.co_name}")
            frame = frame.f_back
        STATE["samples"].append((now, stack))


def watch(name, ticks, wall) -> None:
    """bench_panes.WATCH: a measured call starts (wall None) or ends."""
    if wall is None:
        STATE["ticks"], STATE["gui"] = ticks, threading.get_ident()
        STATE["from"] = len(STATE["gc"]), len(STATE["samples"]), len(STATE["spans"])
        return
    STATE["ticks"] = None
    gaps = [(b - a, a, b) for a, b in zip(ticks, ticks[1:], strict=False)]
    gcs_from, samples_from, spans_from = STATE["from"]
    report(name, wall, gaps, STATE["gc"][gcs_from:], STATE["samples"][samples_from:], STATE["spans"][spans_from:])


def report(name, wall, gaps, gcs, samples, spans) -> None:
    if ARGS.only and ARGS.only not in name:
        return
    big = sorted((g for g in gaps if g[0] * 1000 >= ARGS.gap_ms), key=lambda g: -g[0])
    print(f"\n=== {name}: wall {wall * 1000:.0f} ms, stall {max(g[0] for g in gaps) * 1000:.0f} ms, "
          f"{len(gaps)} turns, {len(big)} gaps >= {ARGS.gap_ms} ms; collections: "
          + ", ".join(f"g{g}:{(e - s) * 1000:.0f}ms({c})" for s, e, g, c, _t in gcs if e - s > 0.002))
    for gap, a, b in big[:6]:
        inside = [f"gen{g} {(e - s) * 1000:.0f} ms ({c} freed, {t})" for s, e, g, c, t in gcs if s >= a and e <= b]
        print(f"  gap {gap * 1000:.0f} ms: collections {inside or 'none'}")
        inside = collections.Counter()
        for start, end, what in spans:
            if start >= a and end <= b:
                inside[what] += (end - start) * 1000
        print("    timed: " + ", ".join(f"{what} {ms:.0f} ms" for what, ms in inside.most_common()))
        stacks = [st for t, st in samples if a <= t <= b]
        counts = collections.Counter()
        for stack in stacks:
            app_frames = [f for f in stack if f.startswith("app/")] or stack[:1]
            counts[" <- ".join(app_frames[:ARGS.depth])] += 1
        for line, n in counts.most_common(ARGS.lines):
            print(f"    {n:3d} x {line}")


def main() -> None:
    stop = threading.Event()
    threading.Thread(target=sampler, args=(stop,), daemon=True).start()
    gc.callbacks.append(on_gc)
    bench_panes.WATCH = watch
    time_spans()
    result = bench_panes.measure_panes(session_with_versions, made_up_reply)
    stop.set()
    print()
    print(bench_panes.describe_panes(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--gap-ms", type=float, default=30)
    parser.add_argument("--only", default="")
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--lines", type=int, default=6)
    ARGS = parser.parse_args()
    main()
