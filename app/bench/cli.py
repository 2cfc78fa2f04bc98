"""Run every scenario in one process, interleaving repetitions, and report medians and ratios.

Interleaving (rep 1 of everything, then rep 2...) spreads slow spells of a noisy machine across all figures
instead of penalising whichever ran during them.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from app.bench.constrained import constrained_tps
from app.bench.engines import several_engines_tps
from app.bench.kv_types import KV_COMPARED, kv_agreement, kv_throughput
from app.bench.naive import llama_sequential_tps, llama_threads_tps
from app.bench.raw_loop import raw_loop_decode_tps
from app.bench.reasoning import reasoning_tps
from app.bench.reproducible import mixed_prompts, reproducible_pairs
from app.bench.scenarios import engine_decode_tps, long_prompt_admission, ttft_loaded_vs_idle
from app.bench.sharing import FANOUT, coalesced_decode, fanout_and_rerun, followup_prefill
from app.bench.table import format_table, write_json
from app.bench.workloads import median, prompt_of_length
from app.engine import EngineConfig, default_threads, limits
from app.engine.native import LlamaModel
from app.models import default_model_path


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    max_tokens: int
    repetitions: int
    long_prompt_tokens: int = 1500
    prompt_tokens: int = 64
    shared_prompt_tokens: int = 500
    uncached_reference: bool = True  # also time the fan-out with the prompt cache off
    # bench --gui: window/headless pairs. Single pairs spread widely on a shared 2-vCPU host (sd 0.09 over 15 pairs
    # on 2026-11-26), so the full run takes 9: the median's standard error is then about 0.04, against 0.05 at 5.
    window_pairs: int = 9


FULL = Plan(sizes=(1, 2, 4, 8, 16), max_tokens=96, repetitions=3)
QUICK = Plan(sizes=(1, 4, 8), max_tokens=64, repetitions=1, uncached_reference=False, window_pairs=1)


def in_fresh_thread(fn, *args, **kwargs):
    """Run one measurement on a thread of its own, as the engine runs on its own thread.

    With OpenMP builds every thread that calls into ggml keeps its own worker team; an idle team left on
    another thread (e.g. the main thread after a baseline ran there) slowed the next engine by ~40% here.
    A thread that exits takes its team with it, so no measurement disturbs the next."""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="bench-measurement")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class Progress:
    def __init__(self, total: int):
        self.total, self.done, self.started = total, 0, time.perf_counter()

    def run(self, label: str, fn, *args, **kwargs):
        self.done += 1
        print(f"[{self.done:>3}/{self.total}] {time.perf_counter() - self.started:6.1f}s  {label} …",
              end="", file=sys.stderr, flush=True)
        value = in_fresh_thread(fn, *args, **kwargs)
        if isinstance(value, dict):
            shown = ", ".join(f"{k}={v:.3f}" for k, v in value.items())
        else:
            shown = f"{value:.1f}"
        print(f" {shown}", file=sys.stderr, flush=True)
        return value


def measure(plan: Plan, threads: int) -> dict:
    model_path = default_model_path()
    model = LlamaModel(model_path)
    prompts = [prompt_of_length(model, plan.prompt_tokens, i) for i in range(max(plan.sizes))]
    newcomer = prompt_of_length(model, plan.prompt_tokens, 101)
    long_prompt = prompt_of_length(model, plan.long_prompt_tokens, 202)
    shared_prompt = prompt_of_length(model, plan.shared_prompt_tokens, 303)
    chat_message = prompt_of_length(model, 120, 404)
    mixed = {n: mixed_prompts(model, n) for n in (4, 8)}
    eog, model_name = model.eog_ids, model.info().name
    model.close()
    n_ctx = plan.prompt_tokens + plan.max_tokens + 64
    per_rep = 2 * len(plan.sizes) + 15 + plan.uncached_reference
    progress = Progress(per_rep * plan.repetitions + 1)
    samples: dict[tuple, list] = defaultdict(list)
    for rep in range(1, plan.repetitions + 1):
        tag = f"rep {rep}/{plan.repetitions}"
        for n in plan.sizes:
            args = (model_path, prompts[:n], plan.max_tokens, threads, n_ctx)
            samples["engine", n].append(progress.run(f"{tag} engine N={n} decode t/s", engine_decode_tps, *args))
            samples["raw", n].append(progress.run(f"{tag} raw loop N={n} decode t/s", raw_loop_decode_tps, *args))
        naive_args = (model_path, prompts[:4], plan.max_tokens, threads, n_ctx, eog)
        samples["threads", 4].append(progress.run(f"{tag} Llama x4 in threads", llama_threads_tps, *naive_args))
        samples["sequential", 4].append(progress.run(f"{tag} one Llama, 4 in turn", llama_sequential_tps,
                                                     *naive_args))
        ttft = progress.run(f"{tag} newcomer TTFT idle / with 7 decoding", ttft_loaded_vs_idle,
                            model_path, prompts[:7], newcomer, threads)
        samples["ttft_idle"].append(ttft["idle_s"])
        samples["ttft_loaded"].append(ttft["loaded_s"])
        samples["long"].append(progress.run(f"{tag} {plan.long_prompt_tokens}-token prompt joins 4 streams",
                                            long_prompt_admission, model_path, prompts[:4], long_prompt, threads))
        samples["fanout"].append(progress.run(f"{tag} {plan.shared_prompt_tokens}-token prompt: cold, rerun, "
                                              f"{FANOUT} seeds at once", fanout_and_rerun, model_path,
                                              shared_prompt, threads))
        if plan.uncached_reference:
            samples["fanout_uncached"].append(progress.run(f"{tag} the same with the prompt cache off",
                                                           fanout_and_rerun, model_path, shared_prompt, threads,
                                                           prompt_cache=False))
        samples["followup"].append(progress.run(f"{tag} third chat turn: prompt tokens prefilled",
                                                followup_prefill, model_path, chat_message, threads))
        samples["followup_reproducible"].append(progress.run(
            f"{tag} the same in reproducible mode", followup_prefill, model_path, chat_message, threads,
            reproducible=True))
        feature_args = (model_path, prompts[:8], plan.max_tokens, threads, n_ctx)
        samples["logprobs", 8].append(progress.run(f"{tag} engine N=8 with logprobs=5", engine_decode_tps,
                                                   *feature_args, request_fields={"logprobs": 5}))
        samples["constrained", 8].append(progress.run(f"{tag} engine N=8 free text, under a grammar, under a JSON "
                                                      "schema", constrained_tps, *feature_args))
        samples["reasoning", 8].append(progress.run(f"{tag} engine N=8 thinking, splitter on / off",
                                                    reasoning_tps, *feature_args, off_first=rep % 2 == 0))
        samples["coalesced"].append(progress.run(f"{tag} 4 identical greedy requests: tokens decoded",
                                                 coalesced_decode, model_path, prompts[0], threads))
        samples["two_engines"].append(progress.run(f"{tag} two local models generating at once vs one",
                                                   several_engines_tps, model_path, prompts[:4], plan.max_tokens,
                                                   threads))
        samples["kv_types"].append(progress.run(f"{tag} N=8 decode t/s with an f16, q8_0, q4_0 KV cache",
                                                kv_throughput, *feature_args))
        for n in (4, 8):
            samples["reproducible", n].append(progress.run(
                f"{tag} N={n} mixed prompts end to end, reproducible on / off", reproducible_pairs, model_path,
                mixed[n], plan.max_tokens, threads))
    samples["kv_agreement"].append(progress.run("greedy agreement of q8_0 and q4_0 KV caches with f16",
                                                kv_agreement, *feature_args))
    return summarize(plan, threads, model_name, samples)


def summarize(plan: Plan, threads: int, model_name: str, samples: dict) -> dict:
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
    repro = {str(n): median([p["on"] / p["off"] for p in samples["reproducible", n]]) for n in (4, 8)}
    constrained = samples["constrained", 8]
    return {
        "model": model_name,
        "threads": threads,
        "throughput": {"engine": engine, "raw_loop": raw,
                       "llama_threads": {"4": threads_4}, "llama_sequential": {"4": sequential_4},
                       "engine_logprobs_5": {"8": median(samples["logprobs", 8])},
                       "engine_grammar": {"8": median([r["grammar"] for r in constrained])},
                       "engine_json_schema": {"8": median([r["json_schema"] for r in constrained])}},
        "ratios": {
            "engine_vs_raw": {n: engine[n] / raw[n] for n in engine},
            "engine_vs_best_naive_4": engine["4"] / max(threads_4, sequential_4),
            "ttft_loaded_vs_idle": median(samples["ttft_loaded"]) / median(samples["ttft_idle"]),
            "itl_p99_long_prompt_vs_steady": p99 / steady,
            "long_prompt_ttft_loaded_vs_idle": long_ttft / long_idle,
            "fanout_ttft_vs_single": fan["fanout_last_ttft_s"] / fan["cold_ttft_s"],
            "rerun_ttft_vs_cold": fan["rerun_ttft_s"] / fan["cold_ttft_s"],
            "followup_prefill_vs_new_turn": follow["prefilled"] / follow["new_turn_tokens"],
            "coalesced_decode_tokens_ratio": coalesced["identical"] / coalesced["one"],
            "logprobs_throughput_ratio": median(samples["logprobs", 8]) / engine["8"],
            # Each constrained run over the free-text run beside it (not engine["8"], minutes earlier).
            "grammar_throughput_ratio": median([r["grammar"] / r["free"] for r in constrained]),
            "json_schema_throughput_ratio": median([r["json_schema"] / r["free"] for r in constrained]),
            "reasoning_parsing_ratio": median([r["on"] / r["off"] for r in samples["reasoning", 8]]),
            "reproducible_throughput_ratio": repro,
            "two_engines_vs_one": median([r["together"] / r["one"] for r in samples["two_engines"]]),
            "kv_type_throughput_ratio": {kv: median([r[kv] / r["f16"] for r in samples["kv_types"]])
                                         for kv in KV_COMPARED},
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
                  "prefill_chunk": defaults.prefill_chunk, "cpu_count": os.cpu_count(),
                  "machine": platform.machine(), "python": platform.python_version()},
        "samples": {f"{k[0]}_{k[1]}" if isinstance(k, tuple) else k: v for k, v in samples.items()},
    }


def run_scale(args, threads: int, write_png=None) -> int:
    from app.backends.scaling import describe, find_knee, run_scaling, table, to_json

    levels = run_scaling(default_model_path(), limits.SLOTS.clamp(args.max), threads,
                         on_level=lambda lv: print(f"  {lv.concurrent} concurrent: {lv.aggregate_tps:.1f} t/s "
                                                   f"aggregate, {lv.per_request_tps:.1f} t/s each", file=sys.stderr))
    knee = find_knee(levels)
    print(table(levels))
    print(describe(knee, levels))
    if args.png and write_png is not None:
        write_png(levels, knee, args.png, f"Scaling test, {threads} threads")
        print(f"wrote {args.png}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(to_json(levels, knee), f, indent=2)
        print(f"wrote {args.json}")
    return 0


def run_eval_bench(args, threads: int) -> int:
    from app.bench.eval_suite import CASES, eval_bench

    print(f"Evaluation suite: {CASES} cases x 2 variants with an llm-rubric judge, on Chorus and on llama-server…",
          file=sys.stderr, flush=True)
    result = {"eval": eval_bench(threads)}
    r = result["eval"]
    chorus, server = r["chorus"], r["llama_server"]
    print(f"Chorus: {chorus['wall_s']:.1f} s for {chorus['cells']} cells ({chorus['passed']} passed)")
    if server is None:
        print(r["note"])
    else:
        print(f"llama-server -np 8: {server['wall_s']:.1f} s for {server['cells']} cells ({server['passed']} passed)")
        print(f"Chorus / llama-server wall time: {r['ratio']:.3f}")
    if args.json:
        write_json(args.json, result)
    return 0


def run_embedding_bench(args, threads: int) -> int:
    from app.bench.embeddings import describe, embedding_bench

    result = {"embeddings": embedding_bench(threads)}
    print(describe(result["embeddings"]))
    if args.json:
        write_json(args.json, result)
    return 0


def run_bench(args, measure_gui=None, write_png=None) -> int:
    """`measure_gui(threads, repetitions)` (bench --gui) and `write_png(levels, knee, path, title)` (--scale
    --png) come from the window's layer: app/__main__.py passes them, so the benchmark never imports Qt."""
    threads = args.threads or default_threads()
    if getattr(args, "scale", False):
        return run_scale(args, threads, write_png)
    if getattr(args, "eval", False):
        return run_eval_bench(args, threads)
    if getattr(args, "embeddings", False):
        return run_embedding_bench(args, threads)
    if getattr(args, "server", None):
        from app.bench.server import run_server_bench

        return run_server_bench(args, threads, Progress)
    plan = QUICK if args.quick else FULL
    result = measure(plan, threads)
    if args.gui and measure_gui is not None:
        result["gui"] = measure_gui(threads, repetitions=plan.window_pairs)
    print(format_table(result))
    if args.json:
        write_json(args.json, result)
    return 0
