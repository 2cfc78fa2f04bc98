"""What reproducible mode costs: a mixed workload end to end, reproducible vs not, in one run.

The steady decode state alone would hide the cost (N sequences in consecutive slots need no placeholder), so
this times the whole thing: N prompts of mixed lengths submitted together, from submission until the last one
ends, prefill included. Pairs run interleaved (on, off, on, off...) so drift on the host hits both alike.
"""

from __future__ import annotations

from app.bench.workloads import prompt_of_length, wall_tps
from app.engine import Engine, EngineConfig
from app.engine.native import LlamaModel

# Prompt lengths of the workload, cycled: chat-like, from a short question to a long document.
MIXED_LENGTHS = (60, 450, 150, 600, 90, 300, 200, 120)


def mixed_prompts(model: LlamaModel, n: int, lengths: tuple[int, ...] = MIXED_LENGTHS) -> list[str]:
    return [prompt_of_length(model, lengths[i % len(lengths)], 500 + i) for i in range(n)]


def workload_tps(model_path, prompts: list[str], max_tokens: int, threads: int, reproducible: bool) -> float:
    """Generated tokens per second of wall time, from submitting every prompt to the last completion."""
    config = EngineConfig(model_path=model_path, n_slots=len(prompts), n_ctx_per_slot=1024, n_threads=threads,
                          reproducible=reproducible)
    with Engine(config) as engine:
        return wall_tps([engine], prompts, max_tokens)


def reproducible_pairs(model_path, prompts: list[str], max_tokens: int, threads: int) -> dict[str, float]:
    """One interleaved pair: the workload with reproducible mode on, then off."""
    return {"on": workload_tps(model_path, prompts, max_tokens, threads, True),
            "off": workload_tps(model_path, prompts, max_tokens, threads, False)}
