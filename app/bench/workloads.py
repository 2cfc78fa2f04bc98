"""The benchmark's wall-clock helper; prompts, requests and statistics come from app.backends.workload."""

from __future__ import annotations

import time

from app.backends.workload import GREEDY, TOPICS, fixed_length_request, median, percentile, prompt_of_length

__all__ = ["GREEDY", "TOPICS", "fixed_length_request", "median", "percentile", "prompt_of_length", "wall_tps"]


def wall_tps(engines, prompts: list[str], max_tokens: int) -> float:
    """Generated tokens per second of wall time while every engine serves all `prompts` at once, from the first
    submit to the last completion (prefill included)."""
    started = time.perf_counter()
    handles = [engine.submit(fixed_length_request(p, max_tokens)) for engine in engines for p in prompts]
    tokens = sum(h.result(timeout=600).generated_tokens for h in handles)
    return tokens / (time.perf_counter() - started)
