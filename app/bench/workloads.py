"""Prompts of exact token lengths and the small statistics the scenarios share."""

from __future__ import annotations

import statistics
import time

from app.engine import GenerationRequest, SamplingParams
from app.engine.native import LlamaModel

GREEDY = SamplingParams(temperature=0.0)
TOPICS = ["rivers", "castles", "comets", "gardens", "engines", "forests", "harbors", "deserts",
          "glaciers", "markets", "islands", "bridges", "volcanoes", "libraries", "orchards", "canyons"]


def prompt_of_length(model: LlamaModel, n_tokens: int, seed: int) -> str:
    """A raw prompt that tokenizes to exactly n_tokens (distinct per seed, so no two streams are equal)."""
    topic = TOPICS[seed % len(TOPICS)]
    words = f"Story {seed} about {topic}: once upon a time there was a quiet town where people".split()
    text = ""
    i = 0
    while True:
        candidate = text + (" " if text else "") + words[i % len(words)]
        if len(model.tokenize(candidate, add_special=True)) > n_tokens:
            break
        text, i = candidate, i + 1
    pad = text
    while len(model.tokenize(pad, add_special=True)) < n_tokens:
        pad += "."
    return pad


def fixed_length_request(prompt: str, max_tokens: int, **fields) -> GenerationRequest:
    """Greedy and blind to end-of-generation, so every request generates exactly max_tokens (`fields`: more
    GenerationRequest fields, e.g. logprobs or a grammar that never has to end)."""
    return GenerationRequest(prompt=prompt, max_tokens=max_tokens, sampling=GREEDY, ignore_eos=True, **fields)


def wall_tps(engines, prompts: list[str], max_tokens: int) -> float:
    """Generated tokens per second of wall time while every engine serves all `prompts` at once, from the first
    submit to the last completion (prefill included)."""
    started = time.perf_counter()
    handles = [engine.submit(fixed_length_request(p, max_tokens)) for engine in engines for p in prompts]
    tokens = sum(h.result(timeout=600).generated_tokens for h in handles)
    return tokens / (time.perf_counter() - started)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[rank]
