"""Several local models at once: the aggregate throughput of two engines generating together vs one alone.

Two engines are two models loaded side by side (here the same file twice, so the work per token is equal).
Each runs N fixed-length greedy requests; the figure is generated tokens per second of wall time from the
first submit to the last completion, for one engine alone and for all engines at once.
"""

from __future__ import annotations

from app.bench.workloads import wall_tps
from app.engine import Engine, EngineConfig


def several_engines_tps(model_path, prompts: list[str], max_tokens: int, threads: int,
                        n_engines: int = 2, n_ctx: int = 512) -> dict[str, float]:
    """{"one": t/s of one engine alone, "together": aggregate t/s of n_engines engines at once}."""
    config = EngineConfig(model_path=model_path, n_slots=len(prompts), n_ctx_per_slot=n_ctx, n_threads=threads)
    engines = [Engine(config) for _ in range(n_engines)]
    try:
        one = wall_tps(engines[:1], prompts, max_tokens)
        together = wall_tps(engines, prompts, max_tokens)
    finally:
        for engine in engines:
            engine.close()
    return {"one": one, "together": together}
