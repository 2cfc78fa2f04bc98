"""Several local models at once: the aggregate throughput of two engines generating together vs one alone.

Two engines are two models loaded side by side (here the same file twice, so the work per token is equal).
Each runs N fixed-length greedy requests; the figure is generated tokens per second of wall time from the
first submit to the last completion, for one engine alone and for all engines at once.
"""

from __future__ import annotations

import time

from app.bench.workloads import fixed_length_request
from app.engine import Engine, EngineConfig


def _serve(engines: list[Engine], prompts: list[str], max_tokens: int) -> float:
    """Tokens per second while every engine serves all `prompts` at once."""
    started = time.perf_counter()
    handles = [engine.submit(fixed_length_request(p, max_tokens)) for engine in engines for p in prompts]
    tokens = sum(h.result(timeout=600).generated_tokens for h in handles)
    return tokens / (time.perf_counter() - started)


def several_engines_tps(model_path, prompts: list[str], max_tokens: int, threads: int,
                        n_engines: int = 2, n_ctx: int = 512) -> dict[str, float]:
    """{"one": t/s of one engine alone, "together": aggregate t/s of n_engines engines at once}."""
    config = EngineConfig(model_path=model_path, n_slots=len(prompts), n_ctx_per_slot=n_ctx, n_threads=threads)
    engines = [Engine(config) for _ in range(n_engines)]
    try:
        one = _serve(engines[:1], prompts, max_tokens)
        together = _serve(engines, prompts, max_tokens)
    finally:
        for engine in engines:
            engine.close()
    return {"one": one, "together": together}
