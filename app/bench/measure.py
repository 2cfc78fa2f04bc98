"""The main benchmark: its plans (FULL, QUICK) and every scenario in one process, repetitions interleaved.

Interleaving (rep 1 of everything, then rep 2...) spreads slow spells of a noisy machine across all figures
instead of penalising whichever ran during them. Each measurement runs on a fresh thread (`in_fresh_thread`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

from app.bench.constrained import constrained_tps
from app.bench.engines import several_engines_tps
from app.bench.kv_types import kv_agreement, kv_throughput
from app.bench.naive import llama_sequential_tps, llama_threads_tps
from app.bench.pairs import reference_first
from app.bench.raw_loop import raw_loop_decode_tps
from app.bench.reasoning import reasoning_tps
from app.bench.reproducible import MIXED_LENGTHS, mixed_prompts, reproducible_pairs
from app.bench.scenarios import engine_decode_tps, long_prompt_admission, ttft_loaded_vs_idle
from app.bench.sharing import FANOUT, coalesced_decode, fanout_and_rerun, followup_prefill
from app.bench.summary import summarize
from app.bench.tool_parse import parser_cost_us
from app.bench.workloads import prompt_of_length
from app.engine import limits
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
    frontier: bool = True  # the long prompt at every pacing point of limits.PACING, not only the chosen one
    mixed_lengths: tuple[int, ...] = MIXED_LENGTHS  # the prompts of the reproducible-mode workload
    # bench --gui: window/headless pairs. Single pairs spread widely on a shared 2-vCPU host (sd 0.09 over 15 pairs
    # on 2026-11-26), so the full run takes 9: the median's standard error is then about 0.04, against 0.05 at 5.
    window_pairs: int = 9


FULL = Plan(sizes=(1, 2, 4, 8, 16), max_tokens=96, repetitions=3)
# The quick form checks that every figure is produced, not the figures: shorter prompts and replies, since a prompt's
# prefill on one llama.cpp thread (CI's test processes) takes ~20 ms a token at 1,500 tokens here (attention grows
# with it).
QUICK = Plan(sizes=(1, 4, 8), max_tokens=32, repetitions=1, long_prompt_tokens=400, shared_prompt_tokens=200,
             uncached_reference=False, window_pairs=1, frontier=False,
             mixed_lengths=tuple(n // 2 for n in MIXED_LENGTHS))


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


def measure(plan: Plan, threads: int, pacing: str = limits.PACING_DEFAULT) -> dict:
    """Every scenario, repetitions interleaved; the long prompt at `pacing` (limits.PACING) and at the other points."""
    model_path = default_model_path()
    model = LlamaModel(model_path)
    prompts = [prompt_of_length(model, plan.prompt_tokens, i) for i in range(max(plan.sizes))]
    newcomer = prompt_of_length(model, plan.prompt_tokens, 101)
    long_prompt = prompt_of_length(model, plan.long_prompt_tokens, 202)
    shared_prompt = prompt_of_length(model, plan.shared_prompt_tokens, 303)
    chat_message = prompt_of_length(model, 120, 404)
    mixed = {n: mixed_prompts(model, n, plan.mixed_lengths) for n in (4, 8)}
    eog, model_name = model.eog_ids, model.info().name
    model.close()
    n_ctx = plan.prompt_tokens + plan.max_tokens + 64
    points = {name: f for name, f in limits.PACING.items() if plan.frontier or name == pacing}
    per_rep = 2 * len(plan.sizes) + 14 + len(points) + plan.uncached_reference
    progress = Progress(per_rep * plan.repetitions + 1)
    samples: dict[tuple, list] = defaultdict(list)
    for rep in range(1, plan.repetitions + 1):
        tag = f"rep {rep}/{plan.repetitions}"
        for n in plan.sizes:
            args = (model_path, prompts[:n], plan.max_tokens, threads, n_ctx)
            runs = [("engine", f"{tag} engine N={n} decode t/s", engine_decode_tps),
                    ("raw", f"{tag} raw loop N={n} decode t/s", raw_loop_decode_tps)]
            for kind, label, fn in runs[::-1] if reference_first(rep) else runs:  # a pair, order alternating
                samples[kind, n].append(progress.run(label, fn, *args))
        naive_args = (model_path, prompts[:4], plan.max_tokens, threads, n_ctx, eog)
        samples["threads", 4].append(progress.run(f"{tag} Llama x4 in threads", llama_threads_tps, *naive_args))
        samples["sequential", 4].append(progress.run(f"{tag} one Llama, 4 in turn", llama_sequential_tps,
                                                     *naive_args))
        ttft = progress.run(f"{tag} newcomer TTFT idle / with 7 decoding", ttft_loaded_vs_idle,
                            model_path, prompts[:7], newcomer, threads)
        samples["ttft_idle"].append(ttft["idle_s"])
        samples["ttft_loaded"].append(ttft["loaded_s"])
        for name, factor in points.items():  # the chosen pacing is "long"; the others are the frontier's
            samples["long" if name == pacing else ("long", name)].append(progress.run(
                f"{tag} {plan.long_prompt_tokens}-token prompt joins 4 streams, {name} pacing", long_prompt_admission,
                model_path, prompts[:4], long_prompt, threads, mixed_step_factor=factor))
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
    samples["tool_parse"].append(parser_cost_us())  # CPU only, no model: not worth a progress step
    return summarize(plan, threads, model_name, samples, pacing)
