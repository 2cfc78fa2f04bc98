"""The benchmark's samples summarised: medians of the rates, and each engine-versus-reference figure as the median
of its per-repetition pair ratios (app/bench/pairs.py), with the pairs under "pairs"."""

from __future__ import annotations

import os
import platform

from app.bench.frontier import frontier_point
from app.bench.kv_types import KV_COMPARED
from app.bench.pairs import figure, ratios
from app.bench.sharing import FANOUT
from app.bench.workloads import median
from app.engine import EngineConfig, limits


def summarize(plan, threads: int, model_name: str, samples: dict, pacing: str = limits.PACING_DEFAULT) -> dict:
    engine = {str(n): median(samples["engine", n]) for n in plan.sizes}
    raw = {str(n): median(samples["raw", n]) for n in plan.sizes}
    threads_4, sequential_4 = median(samples["threads", 4]), median(samples["sequential", 4])
    long_runs = samples["long"]
    steady = median([r["steady_median_gap_s"] for r in long_runs])
    p99 = median([r["prefill_p99_gap_s"] for r in long_runs])
    long_ttft = median([r["loaded_ttft_s"] for r in long_runs])
    long_idle = median([r["idle_ttft_s"] for r in long_runs])
    defaults = EngineConfig(model_path="-")
    fan = {k: median([r[k] for r in samples["fanout"]]) for k in samples["fanout"][0]}
    fan_off = ({k: median([r[k] for r in samples["fanout_uncached"]]) for k in samples["fanout_uncached"][0]}
               if samples.get("fanout_uncached") else None)
    follow = samples["followup"][-1]  # greedy: the same counts every repetition
    follow_repro = samples["followup_reproducible"][-1]
    coalesced = samples["coalesced"][-1]
    constrained = samples["constrained", 8]
    pairs = _pairs(plan, samples)
    figures = {name: f["median"] for name, f in pairs.items()}
    return {
        "model": model_name,
        "threads": threads,
        "throughput": {"engine": engine, "raw_loop": raw,
                       "llama_threads": {"4": threads_4}, "llama_sequential": {"4": sequential_4},
                       "engine_logprobs_5": {"8": median(samples["logprobs", 8])},
                       "engine_grammar": {"8": median([r["grammar"] for r in constrained])},
                       "engine_json_schema": {"8": median([r["json_schema"] for r in constrained])}},
        "ratios": {
            "engine_vs_raw": {str(n): figures[f"engine_vs_raw_{n}"] for n in plan.sizes},
            "engine_vs_best_naive_4": figures["engine_vs_best_naive_4"],
            "ttft_loaded_vs_idle": figures["ttft_loaded_vs_idle"],
            "itl_p99_long_prompt_vs_steady": figures["itl_p99_long_prompt_vs_steady"],
            "long_prompt_ttft_loaded_vs_idle": figures["long_prompt_ttft_loaded_vs_idle"],
            "long_prompt_frontier": {name: frontier_point(samples["long" if name == pacing else ("long", name)], f)
                                     for name, f in limits.PACING.items()
                                     if samples.get("long" if name == pacing else ("long", name))},
            "fanout_ttft_vs_single": fan["fanout_last_ttft_s"] / fan["cold_ttft_s"],
            "rerun_ttft_vs_cold": fan["rerun_ttft_s"] / fan["cold_ttft_s"],
            "followup_prefill_vs_new_turn": follow["prefilled"] / follow["new_turn_tokens"],
            "coalesced_decode_tokens_ratio": coalesced["identical"] / coalesced["one"],
            "logprobs_throughput_ratio": figures["logprobs_throughput_ratio"],
            # Each constrained run over the free-text run beside it (not engine["8"], minutes earlier).
            "grammar_throughput_ratio": figures["grammar_throughput_ratio"],
            "json_schema_throughput_ratio": figures["json_schema_throughput_ratio"],
            "reasoning_parsing_ratio": figures["reasoning_parsing_ratio"],
            "reproducible_throughput_ratio": {str(n): figures[f"reproducible_throughput_ratio_{n}"] for n in (4, 8)},
            "two_engines_vs_one": figures["two_engines_vs_one"],
            "kv_type_throughput_ratio": {kv: figures[f"kv_type_throughput_ratio_{kv}"] for kv in KV_COMPARED},
            "kv_type_greedy_agreement": {kv: samples["kv_agreement"][-1][kv] for kv in KV_COMPARED},
        },
        "details": {
            "ttft_idle_s": median(samples["ttft_idle"]), "ttft_loaded_s": median(samples["ttft_loaded"]),
            "steady_gap_s": steady, "long_prompt_p99_gap_s": p99, "long_prompt_ttft_s": long_ttft,
            "long_prompt_idle_ttft_s": long_idle,
            "fanout": fan, "fanout_uncached": fan_off,
            "fanout_uncached_ttft_vs_single": (fan_off["fanout_last_ttft_s"] / fan_off["cold_ttft_s"]
                                               if fan_off else None),
            "followup": follow, "followup_prefill_vs_conversation": follow["prefilled"] / follow["conversation_tokens"],
            "followup_reproducible": follow_repro,
            "followup_prefill_vs_new_turn_reproducible": follow_repro["prefilled"] / follow_repro["new_turn_tokens"],
            "coalesced_decode_tokens": coalesced,
            "two_engines_tps": {k: median([r[k] for r in samples["two_engines"]]) for k in ("one", "together")},
            "reasoning_tps": {k: median([r[k] for r in samples["reasoning", 8]]) for k in ("on", "off")},
            "tool_parse_us_per_token": samples["tool_parse"][-1] if samples["tool_parse"] else None,
            "kv_type_tps": {kv: median([r[kv] for r in samples["kv_types"]]) for kv in ("f16", *KV_COMPARED)},
            "kv_type_identical_requests": {kv: samples["kv_agreement"][-1][f"{kv}_identical"] for kv in KV_COMPARED},
            "kv_type_greedy_agreement_raw_prompts": {kv: samples["kv_agreement"][-1][f"{kv}_raw"]
                                                     for kv in KV_COMPARED},
            "reproducible_workload_tps": {str(n): {k: median([p[k] for p in samples["reproducible", n]])
                                                   for k in ("on", "off")} for n in (4, 8)},
        },
        "setup": {"prompt_tokens": plan.prompt_tokens, "max_tokens": plan.max_tokens,
                  "repetitions": plan.repetitions, "long_prompt_tokens": plan.long_prompt_tokens,
                  "shared_prompt_tokens": plan.shared_prompt_tokens, "fanout": FANOUT,
                  "step_budget": defaults.step_budget, "min_prefill_per_step": defaults.min_prefill_per_step,
                  "max_batch_tokens": defaults.max_batch_tokens, "reproducible": defaults.reproducible,
                  "prefill_chunk": defaults.prefill_chunk, "pacing": pacing, "cpu_count": os.cpu_count(),
                  "machine": platform.machine(), "python": platform.python_version()},
"pairs": pairs,
        "samples": {f"{k[0]}_{k[1]}" if isinstance(k, tuple) else k: v for k, v in samples.items()},
    }


def _pairs(plan, samples: dict) -> dict:
    """Every engine-versus-reference figure as its per-repetition pair ratios (app/bench/pairs.py)."""
    reps = range(len(samples["engine", plan.sizes[0]]))
    long_runs = samples["long"]
    constrained = samples["constrained", 8]
    found = {f"engine_vs_raw_{n}": ratios(samples["engine", n], samples["raw", n]) for n in plan.sizes}
    found |= {
        "engine_vs_best_naive_4": [samples["engine", 4][i] / max(samples["threads", 4][i], samples["sequential", 4][i])
                                   for i in reps] if 4 in plan.sizes else [],
        "ttft_loaded_vs_idle": ratios(samples["ttft_loaded"], samples["ttft_idle"]),
        "itl_p99_long_prompt_vs_steady": [r["prefill_p99_gap_s"] / r["steady_median_gap_s"] for r in long_runs],
        "long_prompt_ttft_loaded_vs_idle": [r["loaded_ttft_s"] / r["idle_ttft_s"] for r in long_runs],
        "logprobs_throughput_ratio": ratios(samples["logprobs", 8], samples["engine", 8]) if 8 in plan.sizes else [],
        "grammar_throughput_ratio": [r["grammar"] / r["free"] for r in constrained],
        "json_schema_throughput_ratio": [r["json_schema"] / r["free"] for r in constrained],
        "reasoning_parsing_ratio": [r["on"] / r["off"] for r in samples["reasoning", 8]],
        "two_engines_vs_one": [r["together"] / r["one"] for r in samples["two_engines"]],
    }
    found |= {f"reproducible_throughput_ratio_{n}": [p["on"] / p["off"] for p in samples["reproducible", n]]
              for n in (4, 8)}
    found |= {f"kv_type_throughput_ratio_{kv}": [r[kv] / r["f16"] for r in samples["kv_types"]] for kv in KV_COMPARED}
    return {name: figure(values) for name, values in found.items() if values}
