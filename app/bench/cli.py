"""Run every scenario in one process, interleaving repetitions, and report medians and ratios.

Interleaving (rep 1 of everything, then rep 2...) spreads slow spells of a noisy machine across all figures
instead of penalising whichever ran during them.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from app.bench.constrained import constrained_tps
from app.bench.engines import several_engines_tps
from app.bench.kv_types import kv_agreement, kv_throughput
from app.bench.naive import llama_sequential_tps, llama_threads_tps
from app.bench.pairs import pairs_needed, reference_first
from app.bench.raw_loop import raw_loop_decode_tps
from app.bench.reasoning import reasoning_tps
from app.bench.reproducible import MIXED_LENGTHS, mixed_prompts, reproducible_pairs
from app.bench.scenarios import engine_decode_tps, long_prompt_admission, ttft_loaded_vs_idle
from app.bench.sharing import FANOUT, coalesced_decode, fanout_and_rerun, followup_prefill
from app.bench.summary import summarize
from app.bench.table import format_table, write_json
from app.bench.tool_parse import parser_cost_us
from app.bench.workloads import prompt_of_length
from app.engine import default_threads, limits
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
    if getattr(args, "code", False):
        from app.bench.eval_code import code_bench, format_code_bench

        result = {"eval_code": code_bench(threads)}
        print(format_code_bench(result["eval_code"]))
        if args.json:
            write_json(args.json, result)
        return 0
    from app.bench.eval_suite import CASES, eval_bench

    print(f"Evaluation suite: {CASES} cases x 2 variants, plain and with an llm-rubric judge, on Chorus, on "
          "llama-server and through promptfoo…", file=sys.stderr, flush=True)
    result = {"eval": eval_bench(threads)}
    r = result["eval"]
    print(f"{r['setup']['slots']} slots; model load {r['chorus']['load_s']:.1f} s (not in the wall times)")
    for name in r["ratio_vs_engine"]:
        run = r["chorus"][name]
        line = (f"{name}: Chorus {run['wall_s']:.1f} s for {run['cells']} cells, {run['generated_tokens']} tokens "
                f"and {run['prompt_tokens']} prompt tokens prefilled ({run['passed']} passed, "
                f"{run.get('unreliable', 0)} unreliable verdicts); at the engine's own rates {run['ideal_s']:.1f} s: "
                f"wall ÷ engine {r['ratio_vs_engine'][name]:.2f} (goal ≤ 1.10)")
        for peer, key in (("llama-server", "ratio_vs_llama_server"), ("promptfoo + llama-server",
                                                                     "ratio_vs_promptfoo")):
            if r[key]:
                other = r["llama_server" if key == "ratio_vs_llama_server" else "promptfoo"][name]
                line += f"; {peer} {other['wall_s']:.1f} s: ÷ {r[key][name]:.2f}"
        print(line)
    if r["note"]:
        print(r["note"])
    if args.json:
        write_json(args.json, result)
    return 0


def _progress(label: str) -> None:
    """A sub-benchmark's run label, on stderr as it starts."""
    print(f"  {label}", file=sys.stderr, flush=True)


def run_spec_bench(args, threads: int) -> int:
    from app.bench.spec_draft import draft_bench, format_draft
    from app.bench.spec_server import format_spec_server, spec_server_bench
    from app.bench.speculative import format_spec, spec_bench

    repetitions = 1 if args.quick else 3
    result = {"speculative": spec_bench(default_model_path(), threads, repetitions=repetitions, on_run=_progress),
              "speculative_vs_llama_server": spec_server_bench(default_model_path(), threads, repetitions, _progress)}
    print(format_spec(result["speculative"]))
    print(format_spec_server(result["speculative_vs_llama_server"]))
    result["speculative_draft_model"] = draft_bench(default_model_path(), threads, repetitions, _progress)
    print(format_draft(result["speculative_draft_model"]))
    if args.json:
        write_json(args.json, result)
    return 0


def run_tools_lora_bench(args, threads: int) -> int:
    """`bench --tools` and/or `--lora`: the paired figures of tool_rate.py and lora_rate.py, in one JSON."""
    import tempfile

    from app.bench.lora_rate import format_lora, lora_bench
    from app.bench.mcp_wait import format_mcp_wait, mcp_wait_bench
    from app.bench.tool_rate import format_tools, tools_bench

    repetitions, result = 1 if args.quick else 3, {}
    with tempfile.TemporaryDirectory(prefix="chorus-bench-") as directory:
        if getattr(args, "tools", False):
            result["mcp_wait"] = mcp_wait_bench(default_model_path(), threads, repetitions, on_run=_progress)
            print(format_mcp_wait(result["mcp_wait"]))
            result["tools"] = tools_bench(default_model_path(), Path(directory), threads, repetitions,
                                          on_run=_progress)
            print(format_tools(result["tools"]))
        if getattr(args, "lora", False):
            result["lora"] = lora_bench(default_model_path(), Path(directory), threads, repetitions,
                                        on_run=_progress)
            print(format_lora(result["lora"]))
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


def run_quant_bench(args, threads: int) -> int:
    from app.bench.quant import format_quant, quant_bench

    result = {"quant": quant_bench(default_model_path(), threads, 1 if args.quick else 3, quick=args.quick,
                                   on_run=_progress, in_thread=in_fresh_thread)}
    print(format_quant(result["quant"]))
    if args.json:
        write_json(args.json, result)
    return 0


def run_audio_bench(args, threads: int) -> int:
    from app.bench.audio import audio_bench, format_audio

    result = {"audio": audio_bench(default_model_path(), threads, 1 if args.quick else 3, on_run=_progress,
                                   in_thread=in_fresh_thread)}
    print(format_audio(result["audio"]))
    if args.json:
        write_json(args.json, result)
    return 0


def run_versions_bench(args) -> int:
    from app.bench.versions import describe, versions_bench

    result = {"versions": versions_bench()}
    print(describe(result["versions"]))
    if args.json:
        write_json(args.json, result)
    return 0


def run_soak_bench(args, measure_soak, write_png=None) -> int:
    """`bench --soak`: `measure_soak(plan, threads, sample, watch)` and `write_png(result, path, labels)` are the
    window's (app/ui/bench_soak.py), handed over by app/__main__.py; --png writes the plot."""
    from app.bench.soak import FULL_SOAK, QUICK_SOAK, SERIES, Sampler, describe, prompt_cache_figures, short_plan
    from app.bench.soak import summarize as summarize_soak

    threads = args.threads or default_threads()
    seconds = getattr(args, "soak_seconds", None)
    plan = short_plan(seconds, args.quick) if seconds else QUICK_SOAK if args.quick else FULL_SOAK
    print(f"Soak: {plan.minutes:.1f} min, {plan.panes} panes regenerating and an evaluation of {plan.eval_cells} "
          f"cells, a sample every {plan.interval_s:g} s…", file=sys.stderr, flush=True)
    sampler = Sampler()

    def watch(engine) -> None:
        cache_mb, kv_cells = prompt_cache_figures(engine)
        sampler.watch(prompt_cache_mb=cache_mb, kv_cells=kv_cells)

    def sample(engine, **window_figures) -> None:
        watch(engine)
        found = sampler.sample(engine.stats().generated_tokens_total if engine else 0, **window_figures)
        print(f"  {found['t_s']:7.1f} s  RSS {found['rss_mb']:.0f} MB, {found['heap_objects']} objects, "
              f"{found['qt_objects']} Qt objects, {found['decode_tps']:.1f} t/s, GUI thread "
              f"{found['gui_cpu_share']:.0%}", file=sys.stderr, flush=True)

    counts = measure_soak(plan, threads, sample, watch)
    result = {"soak": summarize_soak(plan, sampler, counts)}
    print(describe(result["soak"]))
    if args.png and write_png is not None:
        write_png(result["soak"], args.png, SERIES)
        print(f"wrote {args.png}")
    if args.json:
        write_json(args.json, result)
    return 0


def run_panes_bench(args, measure_panes, describe) -> int:
    """`bench --panes`: the window's GUI-thread work at 256 panes and 1,000 versions (app/ui/bench_panes.py)."""
    from app.bench.versions import made_up_reply, session_with_versions

    result = {"panes": measure_panes(session_with_versions, made_up_reply)}
    print(describe(result["panes"]))
    if args.json:
        write_json(args.json, result)
    return 0


GUI_PANES_PAIRS = 3  # window/headless pairs at --gui-panes N (a pair at 256 panes takes ~2 minutes on 2 cores)


def run_gui_panes(args, threads: int, measure_gui) -> int:
    """`bench --gui --gui-panes N`: only the window ÷ headless pairs, with N panes streaming."""
    from app.bench.table import gui_lines

    gui = measure_gui(threads, repetitions=1 if args.quick else GUI_PANES_PAIRS, panes=args.gui_panes)
    gui["pairs_for_5pct"] = pairs_needed(gui["samples"]["pair_ratios"])
    print("\n".join(gui_lines(gui)))
    if args.json:
        write_json(args.json, {"gui": gui})
    return 0


def run_bench(args, measure_gui=None, write_png=None) -> int:
    """`measure_gui(threads, repetitions)` (bench --gui) and `write_png(levels, knee, path, title)` (--scale
    --png) come from the window's layer: app/__main__.py passes them, so the benchmark never imports Qt."""
    threads = args.threads or default_threads()
    if getattr(args, "scale", False):
        return run_scale(args, threads, write_png)
    if getattr(args, "eval", False):
        return run_eval_bench(args, threads)
    if getattr(args, "spec", False):
        return run_spec_bench(args, threads)
    if getattr(args, "tools", False) or getattr(args, "lora", False):
        return run_tools_lora_bench(args, threads)
    if getattr(args, "embeddings", False):
        return run_embedding_bench(args, threads)
    if getattr(args, "versions", False):
        return run_versions_bench(args)
    if getattr(args, "quant", False):
        return run_quant_bench(args, threads)
    if getattr(args, "run_memory", False):
        from app.bench.run_memory import run_memory_command

        return run_memory_command(args)
    if getattr(args, "audio", False):
        return run_audio_bench(args, threads)
    if getattr(args, "server", None):
        from app.bench.server import run_server_bench

        return run_server_bench(args, threads, Progress)
    plan = QUICK if args.quick else FULL
    if getattr(args, "gui_panes", None) and measure_gui is not None:
        return run_gui_panes(args, threads, measure_gui)
    result = measure(plan, threads, getattr(args, "pacing", None) or limits.PACING_DEFAULT)
    if args.gui and measure_gui is not None:
        result["gui"] = gui = measure_gui(threads, repetitions=plan.window_pairs)
        gui["pairs_for_5pct"] = pairs_needed(gui["samples"]["pair_ratios"])
    print(format_table(result))
    from app.bench.versions import describe, versions_bench

    result["versions"] = versions_bench()
    print(describe(result["versions"]))
    if args.json:
        write_json(args.json, result)
    return 0
