"""`python -m app bench`: which benchmark the options ask for, run, printed and written as JSON. The main one's plans
and scenarios are in measure.py; each other kind is a module of its own, run by a `run_*` here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.bench.measure import FULL, QUICK, Progress, in_fresh_thread, measure
from app.bench.pairs import pairs_needed
from app.bench.table import format_table, write_json
from app.engine import default_threads, limits
from app.models import default_model_path


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
