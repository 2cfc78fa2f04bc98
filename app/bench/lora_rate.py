"""`bench --lora`: throughput with 2 LoRA adapter sets ÷ 1 set at N = 8, and 1 set ÷ the base model, as pairs
within one engine.

Two random adapters for the model (`model_files.write_lora`, seeds 0 and 1: every layer's attn_q, attn_v, ffn_up
and ffn_down, rank 8). 8 requests, greedy, `ignore_eos` and a fixed `max_tokens`, so every run generates the same
tokens: all on the base model, all with adapter A ("1 set"), or alternately A and B ("2 sets": the engine never
mixes two sets in one decode, so it interleaves two groups of 4). Each repetition runs the three back to back,
order reversed every other repetition; each figure is the median of its per-repetition ratios (pairs.py).
"""

from __future__ import annotations

from pathlib import Path

from app.bench.model_files import write_lora
from app.bench.pairs import figure
from app.bench.speculative import GREEDY, timed
from app.engine import Engine, EngineConfig, GenerationRequest, LoraAdapter

N = 8
CASES = ("base", "1 set", "2 sets")


def requests(sets: list[tuple[LoraAdapter, ...]], max_tokens: int) -> list[GenerationRequest]:
    """N requests, request i with adapter set i mod len(sets)."""
    return [GenerationRequest(messages=[{"role": "user", "content": f"Write a story about lighthouse number {i}."}],
                              sampling=GREEDY, max_tokens=max_tokens, ignore_eos=True, lora=sets[i % len(sets)])
            for i in range(N)]


def lora_bench(model_path: Path, directory: Path, threads: int, repetitions: int = 3, max_tokens: int = 96,
               on_run=None) -> dict:
    """Figures "2 sets ÷ 1" and "1 set ÷ base" (median of pairs), with every run. `on_run(label)` is called
    before each run (progress)."""
    a = LoraAdapter(str(write_lora(model_path, directory / "lora-a.gguf", seed=0)))
    b = LoraAdapter(str(write_lora(model_path, directory / "lora-b.gguf", seed=1)))
    sets = {"base": [()], "1 set": [(a,)], "2 sets": [(a,), (b,)]}
    runs = []
    with Engine(EngineConfig(model_path=model_path, n_slots=N, n_threads=threads)) as engine:
        for rep in range(1, repetitions + 1):
            row = {}
            for case in CASES if rep % 2 else CASES[::-1]:
                if on_run:
                    on_run(f"rep {rep}: {case}")
                row[case] = timed(engine, requests(sets[case], max_tokens))
            runs.append(row)
    return {"two_sets_vs_one": figure([r["2 sets"]["tps"] / r["1 set"]["tps"] for r in runs]),
            "one_set_vs_base": figure([r["1 set"]["tps"] / r["base"]["tps"] for r in runs]),
            "runs": runs, "max_tokens": max_tokens}


def format_lora(result: dict) -> str:
    lines = [f"LoRA adapters at N = {N}, tokens per second of wall time (median of pairs):"]
    for key, label in (("two_sets_vs_one", "2 adapter sets ÷ 1 set"), ("one_set_vs_base", "1 set ÷ base model")):
        r = result[key]
        lines.append(f"  {label:<24} {r['median']:.2f}x  pairs {', '.join(f'{p:.2f}' for p in r['pairs'])}")
    return "\n".join(lines)
