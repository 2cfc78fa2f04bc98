"""The scaling test: how many concurrent requests this machine takes before each one gets slow.

Ramp 1, 2, 4, ... N requests at once on one engine with N slots; at each level measure the aggregate decode
rate (while all of them generate together), each request's own rate and its time to first token. The knee is
the last level whose step up still paid: beyond it the aggregate gains less than `GAIN_THRESHOLD` per doubling
while each request slows down. Qt-free: the window's Tools → Scaling test and `bench --scale` share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from app.backends.workload import Timeline, fixed_length_request, median, prompt_of_length
from app.engine import Engine, EngineConfig
from app.engine.native import LlamaModel

# Doubling the concurrency roughly halves each request's speed; a doubling that adds less than this to the
# aggregate is a poor trade (measured here: +51 % from 2 to 4 and +26 % from 4 to 8, then +11 % from 8 to 16).
GAIN_THRESHOLD = 0.15
PROMPT_TOKENS, MAX_TOKENS = 64, 64


@dataclass(frozen=True)
class Level:
    concurrent: int
    aggregate_tps: float  # all requests together, while all generate
    per_request_tps: float  # median of each request's own decode rate
    ttft_s: float  # median time to first token


def levels_up_to(n: int) -> list[int]:
    """1, 2, 4, ... up to n (n itself included)."""
    out, level = [], 1
    while level < n:
        out.append(level)
        level *= 2
    return [*out, n]


def measure_level(engine: Engine, prompts: list[str]) -> Level:
    timeline = Timeline(expected=len(prompts))
    unsubscribe = engine.subscribe(timeline.on_step)
    try:
        handles = [engine.submit(fixed_length_request(p, MAX_TOKENS)) for p in prompts]
        results = [h.result(timeout=600) for h in handles]
    finally:
        unsubscribe()
    engine.clear_prompt_cache()  # the next level's prompts are cold too
    engine.wait_idle(30)
    span = (timeline.first_finish_at or 0) - (timeline.all_generating_at or 0)
    tokens = timeline.tokens_at_first_finish - timeline.tokens_when_all_generating
    aggregate = tokens / span if span > 0 and tokens > 0 else 0.0
    return Level(len(prompts), aggregate, median([r.decode_tps or 0.0 for r in results]),
                 median([r.ttft_s or 0.0 for r in results]))


def run_scaling(model_path, max_concurrent: int, threads: int,
                on_level: Callable[[Level], None] | None = None,
                should_stop: Callable[[], bool] = lambda: False) -> list[Level]:
    """Measure every level (on this thread); `on_level` hears each as it is measured."""
    model = LlamaModel(model_path)
    prompts = [prompt_of_length(model, PROMPT_TOKENS, i) for i in range(max_concurrent)]
    model.close()
    config = EngineConfig(model_path=model_path, n_slots=max_concurrent,
                          n_ctx_per_slot=PROMPT_TOKENS + MAX_TOKENS + 64, n_threads=threads)
    results = []
    with Engine(config) as engine:
        engine.submit(fixed_length_request(prompts[0], 4)).result(timeout=120)  # warm up: first decode is slow
        engine.clear_prompt_cache()
        for n in levels_up_to(max_concurrent):
            if should_stop():
                break
            results.append(measure_level(engine, prompts[:n]))
            if on_level:
                on_level(results[-1])
    return results


@dataclass(frozen=True)
class Knee:
    concurrent: int  # the recommended number of slots
    next_level: int | None  # the level that was not worth it (None: every step up paid)
    gain: float  # aggregate gain going from `concurrent` to `next_level`
    slowdown: float  # how much slower each request got there


def find_knee(levels: list[Level]) -> Knee | None:
    if not levels:
        return None
    for before, after in zip(levels, levels[1:], strict=False):
        gain = after.aggregate_tps / before.aggregate_tps - 1 if before.aggregate_tps else 0.0
        if gain < GAIN_THRESHOLD:
            slowdown = 1 - after.per_request_tps / before.per_request_tps if before.per_request_tps else 0.0
            return Knee(before.concurrent, after.concurrent, gain, slowdown)
    return Knee(levels[-1].concurrent, None, 0.0, 0.0)


def describe(knee: Knee | None, levels: list[Level]) -> str:
    if knee is None:
        return "No measurements."
    if knee.next_level is None:
        return (f"Up to {knee.concurrent} concurrent requests every doubling still raised the aggregate by "
                f"≥ {GAIN_THRESHOLD:.0%}: no knee found; try more.")
    return (f"Beyond {knee.concurrent} concurrent requests the aggregate gains only {knee.gain:+.0%} (at "
            f"{knee.next_level}) while each request slows {knee.slowdown:.0%}: use {knee.concurrent} slots.")


def table(levels: list[Level]) -> str:
    lines = [f"{'concurrent':>10} {'aggregate t/s':>14} {'per request t/s':>16} {'TTFT ms':>8}"]
    lines += [f"{lv.concurrent:>10} {lv.aggregate_tps:>14.1f} {lv.per_request_tps:>16.1f} {lv.ttft_s * 1000:>8.0f}"
              for lv in levels]
    return "\n".join(lines)


def to_json(levels: list[Level], knee: Knee | None) -> dict:
    return {"levels": [asdict(lv) for lv in levels], "knee": asdict(knee) if knee else None,
            "summary": describe(knee, levels)}
