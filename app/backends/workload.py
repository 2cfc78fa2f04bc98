"""Measurement helpers shared by the scaling test (app/backends/scaling.py) and the benchmark (app/bench): prompts
of exact token lengths, fixed-length requests, per-request token timelines from step events, small statistics.
Qt-free, so the window's Tools → Scaling test and `bench` share them."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field

from app.engine import GenerationRequest, SamplingParams, StepEvent
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


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[rank]


@dataclass
class Timeline:
    """Per-request times at which the engine produced a token, from the step events."""

    token_times: dict[int, list[float]] = field(default_factory=dict)
    generated: dict[int, int] = field(default_factory=dict)
    all_generating_at: float | None = None
    tokens_when_all_generating: int = 0
    first_finish_at: float | None = None
    tokens_at_first_finish: int = 0
    expected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_step(self, event: StepEvent) -> None:
        now = time.perf_counter()
        with self.lock:
            for request_id, count in event.tokens.items():
                self.token_times.setdefault(request_id, []).append(now)
                self.generated[request_id] = count
            if self.all_generating_at is None and self.expected and len(self.generated) >= self.expected:
                self.all_generating_at = now
                self.tokens_when_all_generating = sum(self.generated.values())
            if event.finished and self.first_finish_at is None and self.all_generating_at is not None:
                self.first_finish_at = now
                self.tokens_at_first_finish = sum(self.generated.values())

    def gaps(self, request_id: int, start: float, end: float) -> list[float]:
        times = self.token_times.get(request_id, [])
        return [b - a for a, b in zip(times, times[1:], strict=False) if start < b <= end]
