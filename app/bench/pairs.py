"""Figures that survive a drifting host: each repetition runs a measurement and its reference back to back (their
order alternating between repetitions), and a figure is the median of the per-repetition ratios, never a ratio
of medians taken minutes apart. Every figure keeps its pairs, and says how many it would need to be within ±5 %.

On a shared 2-vCPU host the host's speed drifts by tens of percent between repetitions, while the two runs of
one pair see nearly the same host; a pair's ratio cancels the drift that a ratio of medians keeps.
"""

from __future__ import annotations

import math
import statistics

from app.bench.workloads import median

WITHIN = 0.05  # the relative half-width asked of a figure's 95 % interval
Z_95 = 1.96
MEDIAN_EFFICIENCY = math.sqrt(math.pi / 2)  # a median's standard error ÷ a mean's, for normal samples


def ratios(measured: list[float], reference: list[float]) -> list[float]:
    """Per-repetition ratios: measured[i] ÷ reference[i] (the two ran back to back)."""
    return [m / r for m, r in zip(measured, reference, strict=True)]


def pairs_needed(pair_ratios: list[float], within: float = WITHIN) -> int | None:
    """Pairs whose median has a 95 % interval within ±`within` of itself, given these pairs' spread (normal
    approximation of the median's standard error); None with fewer than two pairs (no spread to go on)."""
    if len(pair_ratios) < 2:
        return None
    spread = statistics.stdev(pair_ratios) / median(pair_ratios)
    return max(1, math.ceil((Z_95 * MEDIAN_EFFICIENCY * spread / within) ** 2))


def figure(pair_ratios: list[float]) -> dict:
    """A figure's JSON: the median of its pair ratios, the pairs, and the pairs it would need for ±5 %."""
    return {"median": median(pair_ratios), "pairs": pair_ratios, "pairs_for_5pct": pairs_needed(pair_ratios)}


def run_pairs(order: list[tuple[str, object]], repetitions: int, measure, on_run=None) -> list[dict]:
    """`repetitions` pairs: each runs `measure(what)` for both (kind, what) of `order` back to back, the order
    alternating (`reference_first`), and is {kind: what it measured}. `on_run(label)` before each run."""
    runs = []
    for rep in range(1, repetitions + 1):
        pair = {}
        for kind, what in order[::-1] if reference_first(rep) else order:
            if on_run:
                on_run(f"rep {rep}: {kind}")
            pair[kind] = measure(what)
        runs.append(pair)
    return runs


def reference_first(rep: int) -> bool:
    """Whether repetition `rep` (from 1) runs the reference before the measurement: every other one does."""
    return rep % 2 == 0
