"""`bench --soak`: hours of work in one window without growth. The window's part (app/ui/bench_soak.py) keeps panes
generating (runs, regenerations, so versions pile up, and an evaluation) while the session autosaves; this module
is the Qt-free rest: the plan, the resources sampled (`Sampler`), and the end ÷ start summary of the contract
(`{"soak": {"minutes", "rss_end_vs_start", "decode_end_vs_start", "series": {...}}}`).

Each sample records, for the whole process: RSS, Python heap objects (gc), Qt objects (counted by the window's
part), open files and threads; the autosave's file size; the engine's prompt cache (bytes of the token lists and
logits it keeps) and KV cells in use (running sequences' context plus the cached prompts'); and, since the
previous sample, the decode rate and the GUI thread's share of a core. The prompt cache and the KV cells change with
every request that starts or ends (a slot's prompt is cached when it frees, dropped when it is taken again), so one
instant a minute reads 0 or its most; for those two a sample is the mean of the readings `Sampler.watch` took since
the sample before (the window's part reads them every POLL_S). End ÷ start compares the mean of the last
third of the samples after the warm-up with the mean of the first third, so one noisy minute neither makes nor
hides a trend.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from dataclasses import dataclass

import psutil

# what each series is, in the order the table and the plot show them
SERIES = {
    "rss_mb": "resident memory (MB)",
    "heap_objects": "Python heap objects (gc)",
    "qt_objects": "Qt objects",
    "open_files": "open files",
    "threads": "threads",
    "session_file_mb": "autosave file (MB)",
    "prompt_cache_mb": "prompt cache (MB)",
    "kv_cells": "KV cells in use",
    "decode_tps": "decode rate (t/s)",
    "gui_cpu_share": "GUI thread (share of a core)",
}
GROWS_WITH_WORK = ("session_file_mb",)  # grows by the versions it holds (bounded by their size)


@dataclass(frozen=True)
class SoakPlan:
    seconds: float  # how long panes generate
    interval_s: float  # one sample every …
    warmup_s: float  # samples before this are not the start
    panes: int = 8
    max_tokens: int = 48
    eval_cells: int = 2000  # an evaluation of this many cells runs beside the panes

    @property
    def minutes(self) -> float:
        return self.seconds / 60


FULL_SOAK = SoakPlan(seconds=3600, interval_s=60, warmup_s=300, eval_cells=2000)
QUICK_SOAK = SoakPlan(seconds=180, interval_s=10, warmup_s=30, eval_cells=200)


def short_plan(seconds: float, quick: bool = False) -> SoakPlan:
    """A soak of `seconds` (tests, a smoke run, a profile): every part runs once at least. Alone, 2 panes and 4
    cells, and its figures mean nothing; `quick`, the quick form's panes and cells for that time."""
    if quick:
        return dataclasses.replace(QUICK_SOAK, seconds=seconds, interval_s=min(QUICK_SOAK.interval_s, seconds / 4),
                                   warmup_s=min(QUICK_SOAK.warmup_s, seconds / 4))
    return SoakPlan(seconds=seconds, interval_s=max(0.5, seconds / 8), warmup_s=0, panes=2, max_tokens=8,
                    eval_cells=4)


def prompt_cache_figures(engine) -> tuple[float, int]:
    """(MB the prompt cache keeps, KV cells in use) of a local Engine, read from another thread: the cache's
    records are copied first (the engine thread may change them meanwhile; a lost race reads again)."""
    if engine is None:
        return 0.0, 0
    sharing = getattr(engine, "_sharing", None)
    cache = getattr(sharing, "cache", None)
    records: list = []
    for _ in range(5):
        try:
            records = list(getattr(cache, "_records", {}).values())
            break
        except RuntimeError:  # changed size during iteration
            continue
    cached_bytes = sum(r.tokens.nbytes + (r.logits.nbytes if r.logits is not None else 0) for r in records)
    cached_cells = sum(len(r.tokens) for r in records)
    return cached_bytes / 1e6, sum(engine.stats().slot_context_used) + cached_cells


def tracked_objects() -> int:
    """How many objects the cyclic collector tracks, counted without a moment in which Python code could run
    while the list `gc.get_objects()` makes holds them: a thread switched to then (the engine's, building a tuple
    from a generator) would find its half-built tuple referenced twice, and CPython refuses to resize it
    (`SystemError: Objects/tupleobject.c: bad argument to internal function`, seen in a soak). Here the list is
    made and measured inside C calls (sum over map), so the interpreter never checks for a switch in between."""
    return sum(map(len, map(gc.get_objects, (None,))))


class Sampler:
    """Samples of the process's resources; `sample(**more)` adds the window's figures (qt_objects,
    session_file_mb, prompt_cache_mb, kv_cells) and computes the decode rate from `generated_tokens`, a running
    total."""

    def __init__(self):
        self.process = psutil.Process()
        self.t0 = time.perf_counter()
        # beside the resources, the versions the session held at each sample: what the resources grow with
        self.series: dict[str, list] = {"t_s": [], "versions": [], **{name: [] for name in SERIES}}
        self._last: tuple[float, int, float] | None = None
        self._own_cpu_s = 0.0  # the last sample's own time on the GUI thread (kept out of the GUI's share)
        self._watched: dict[str, list[float]] = {}  # readings since the last sample (`watch`)

    def watch(self, **figures: float) -> None:
        """A reading of figures that change with every request (the prompt cache, KV cells): the next sample has
        the mean of the readings since the one before, not its own instant."""
        for name, value in figures.items():
            self._watched.setdefault(name, []).append(value)

    def sample(self, generated_tokens: int, gui_cpu_s: float = 0.0, **more) -> dict:
        """`gui_cpu_s`: the GUI thread's CPU time (time.thread_time()) when the caller began this sample, on that
        thread: its share of a core since the previous sample leaves out the sampling's own time (counting Qt's
        objects, the collection: 0.3 s at 330,000 objects)."""
        now = time.perf_counter()
        gc.collect()  # what stays, not what waits for the collector
        found = {"t_s": now - self.t0, "rss_mb": self.process.memory_info().rss / 1e6,
                 "heap_objects": tracked_objects(), "open_files": self.process.num_fds(),
                 "threads": self.process.num_threads(), **more,
                 **{name: _mean(values) for name, values in self._watched.items() if values}}
        self._watched = {}
        last = self._last
        elapsed = now - last[0] if last else 0.0
        found["decode_tps"] = (generated_tokens - last[1]) / elapsed if elapsed > 0 else 0.0
        found["gui_cpu_share"] = (gui_cpu_s - last[2] - self._own_cpu_s) / elapsed if elapsed > 0 else 0.0
        for name in self.series:
            self.series[name].append(found.get(name, 0))
        self._last, self._own_cpu_s = (now, generated_tokens, gui_cpu_s), time.thread_time() - gui_cpu_s
        return found


def _mean(values: list) -> float:
    return sum(values) / len(values) if values else 0.0


RATES = ("decode_tps", "gui_cpu_share")  # figures over the interval since the sample before, not levels


def end_vs_start(series: dict[str, list], warmup_s: float, interval_s: float | None = None) -> dict[str, float | None]:
    """Per resource, the mean of the last third of the samples after the warm-up ÷ the mean of the first third
    (None when the start is zero, or there are fewer than two such samples). The decode rate's first sample is
    no rate (nothing came before it), so it is left out; so are the rates of a sample taken less than half an
    `interval_s` after the one before (the closing sample, as the panes stop: a rate over a fraction of a second)."""
    times = series["t_s"]
    kept = [i for i, t in enumerate(times) if t >= warmup_s and i > 0]
    if len(kept) < 2:
        return {name: None for name in SERIES}
    whole = [i for i in kept if interval_s is None or times[i] - times[i - 1] >= interval_s / 2]
    ratios = {}
    for name in SERIES:
        samples = whole if name in RATES and len(whole) >= 2 else kept
        third = max(1, len(samples) // 3)
        start = _mean([series[name][i] for i in samples[:third]])
        end = _mean([series[name][i] for i in samples[-third:]])
        ratios[name] = end / start if start else None
    return ratios


def summarize(plan: SoakPlan, sampler: Sampler, counts: dict) -> dict:
    """The contract's JSON: minutes, rss_end_vs_start, decode_end_vs_start, series; plus every resource's
    ratio and what the window did (`counts`: runs, versions, evaluation cells, autosaves…)."""
    ratios = end_vs_start(sampler.series, plan.warmup_s, plan.interval_s)
    return {"minutes": round(sampler.series["t_s"][-1] / 60, 3) if sampler.series["t_s"] else 0.0,
            "planned_minutes": plan.minutes, "interval_s": plan.interval_s, "warmup_s": plan.warmup_s,
            "rss_end_vs_start": ratios["rss_mb"], "decode_end_vs_start": ratios["decode_tps"],
            "end_vs_start": ratios, "work": counts, "series": sampler.series}


def describe(result: dict) -> str:
    lines = [f"Soak: {result['minutes']:.1f} min, a sample every {result['interval_s']:g} s, warm-up "
             f"{result['warmup_s']:g} s; " + ", ".join(f"{k} {v}" for k, v in result["work"].items())]
    for name, label in SERIES.items():
        values, ratio = result["series"][name], result["end_vs_start"][name]
        shown = "n/a" if ratio is None else f"{ratio:.3f}"
        note = " (grows with the versions it holds)" if name in GROWS_WITH_WORK else ""
        lines.append(f"  {label:<28} first {values[0]:>12.2f}  last {values[-1]:>12.2f}  end ÷ start {shown}{note}")
    return "\n".join(lines)
