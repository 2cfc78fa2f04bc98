"""Command line: the window by default, `run` for headless runs, `eval` for evaluations, `bench` for the
benchmark, `--self-test` for an offscreen check.

Imports are lazy so `bench` never loads Qt (unless --gui or --png asks for the window's parts, which only this
module, above every layer, hands it) and the window never loads the benchmark.
"""

from __future__ import annotations

import argparse
import logging
import sys

from app.arena.board import ARENA_SEED, BOOTSTRAP_ROUNDS
from app.backends.embedding import DEFAULT_EMBEDDER
from app.cli import mcp_cli
from app.cli.quant_args import add_parsers as quant_parsers
from app.engine import limits
from app.evaluate.run_compare import ALPHA as COMPARE_ALPHA


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability between 0 and 1")
    return value


PACING_HELP = ("how a long prompt shares steps with running requests: smooth (their tokens keep flowing), balanced "
               f"(the default) or fast (its first token sooner); a step with prompt tokens takes at most "
               f"{', '.join(f'{v:g}' for v in limits.PACING.values())}x a decode step")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chorus", description="Run many prompts at once on one local model.")
    parser.add_argument("--session", metavar="PATH",
                        help="a session file (*.chorus.json) to open; `chorus PATH.chorus.json` works too")
    parser.add_argument("--model", help="GGUF file to load instead of the embedded default")
    parser.add_argument("--run-all", action="store_true", help="run every pane once the model has loaded")
    parser.add_argument("--print-restored", action="store_true",
                        help="diagnostics: print the session the window restores as one JSON line, then exit")
    parser.add_argument("--self-test", action="store_true",
                        help="offscreen end-to-end check: 4 panes on the real engine and each bundled part (V8, "
                             "audio decoding, the MCP client), prints one JSON line")
    parser.add_argument("--expect-gpu-offload", action="store_true",
                        help="--self-test: also fail unless this build offloads layers to a GPU (release CI, "
                             "macOS arm64 with Metal)")
    parser.add_argument("--log-level", default="WARNING", help="Python log level (DEBUG shows llama.cpp's log)")
    sub = parser.add_subparsers(dest="command")
    bench = sub.add_parser("bench", help="measure the engine against a bare loop and naive alternatives")
    bench.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (< 3 minutes)")
    bench.add_argument("--json", metavar="PATH", help="write the results as JSON")
    bench.add_argument("--gui", action="store_true", help="also measure 16 streaming panes in the window")
    bench.add_argument("--gui-panes", type=int, metavar="N", default=None,
                       help="with --gui: only the window against headless, with N panes streaming (on at most the "
                       "slots' limit), 3 pairs (--quick: 1)")
    bench.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores, <= 8)")
    bench.add_argument("--eval", action="store_true",
                       help="the evaluation suite instead: 48 cases x 2 variants with an llm-rubric judge, wall time "
                       "on Chorus and on the llama-server `make llama-server` built")
    bench.add_argument("--code", action="store_true",
                       help="with --eval: the suite with one javascript and one python check per cell vs without")
    bench.add_argument("--spec", action="store_true",
                       help="speculative decoding instead: copy, extract and free generation at N = 1, and 8 "
                       "copies at N = 8, n-gram drafts (auto and on) against plain, in pairs")
    bench.add_argument("--tools", action="store_true",
                       help="tool panes instead: 8 constrained tool calls vs the same tokens of free text, in pairs "
                       "(needs llama.cpp's templates: `make llama-source`)")
    bench.add_argument("--lora", action="store_true",
                       help="LoRA adapters instead: 8 requests with 2 adapter sets vs 1 vs the base model, in pairs; "
                       "with --tools, both")
    bench.add_argument("--embeddings", action="store_true",
                       help="embedding throughput instead: 64 answers through the local embedder (the main model), "
                       "batched and one by one, and the time to cluster them")
    bench.add_argument("--versions", action="store_true",
                       help="only open and autosave a session with 1,000 versions (no model needed)")
    bench.add_argument("--soak", action="store_true",
                       help="the endurance test instead: the window generating for 60 minutes (3 with --quick), "
                       "its memory, objects, files, threads, session file, prompt cache and decode rate sampled")
    bench.add_argument("--soak-seconds", type=float, help=argparse.SUPPRESS)  # a smoke run of the soak (tests)
    bench.add_argument("--panes", action="store_true",
                       help="the window at scale instead (no model): a 256-pane sweep, autosave, open, table and "
                       "diff at 256 panes and at 1,000 versions, each timed on the GUI thread")
    bench.add_argument("--quant", action="store_true",
                       help="quantization fidelity instead: the KLD pass and perplexity against llama-perplexity's "
                       "tokens per second on the same text, in pairs (`make llama-server` builds it)")
    bench.add_argument("--pacing", choices=tuple(limits.PACING), default=limits.PACING_DEFAULT,
                       help="the pacing of the long-prompt figure (the two ends are measured beside it)")
    bench.add_argument("--run-memory", action="store_true",
                       help="`run`'s memory instead: the peak RSS of 10,000 requests ÷ 100 (2,000 with --quick)")
    bench.add_argument("--audio", action="store_true",
                       help="audio fan-out instead: 8 panes asking about one 10 s clip, the last TTFT ÷ one pane's, "
                       "beside llama-server --mmproj -np 8 in the same run (the tests' tiny audio projector)")
    bench.add_argument("--scale", action="store_true",
                       help="the scaling test instead: ramp 1, 2, 4... concurrent requests and name the knee")
    bench.add_argument("--max", type=int, default=16, help="--scale: most concurrent requests (default 16)")
    bench.add_argument("--png", metavar="PATH", help="--scale, --soak: write the chart as a PNG")
    bench.add_argument("--server", metavar="URL", help="compare the engine with this OpenAI-compatible server "
                       "(same model and threads, e.g. llama-server -np 8 -t 2) at N = 4 and 8")
    bench.add_argument("--server-model", metavar="NAME", help="--server: the model to ask for (default: its first)")
    run = sub.add_parser("run", help="run a JSONL of requests or a saved session headless, all at once")
    run.add_argument("input", help="a JSONL file (one request per line) or a session file (*.chorus.json)")
    run.add_argument("--out", metavar="OUT.jsonl", help="write result lines here (default: standard output)")
    run.add_argument("--report", metavar="REPORT.md", help="also write a comparison report (.md or .html)")
    source = run.add_mutually_exclusive_group()
    source.add_argument("--model", help="GGUF file to load instead of the embedded default")
    source.add_argument("--server", metavar="URL",
                        help="an OpenAI-compatible server instead, e.g. http://127.0.0.1:8080/v1 (llama-server, vLLM)")
    run.add_argument("--mmproj", metavar="FILE", help="the local model's projector (vision or audio), for lines with "
                     "image or audio parts (default: the one beside the model file, if any)")
    run.add_argument("--server-model", metavar="NAME", help="--server: the model to ask for (default: its first)")
    run.add_argument("--api-key", help="--server: API key (default: $CHORUS_API_KEY, else the one remembered for "
                     "that URL; never written to outputs or logs)")
    run.add_argument("--remember-key", action="store_true",
                     help="--server: keep --api-key in the system keyring for this URL")
    run.add_argument("--lora", action="append", metavar="FILE",
                     help="a LoRA adapter (GGUF), repeatable, as llama-server's: lines without \"lora\" get every "
                     "one at scale 1; a line's \"lora\": [{\"id\": 0, \"scale\": 0.5}] picks them by order (or "
                     "by \"path\")")
    run.add_argument("--slots", type=int, default=limits.SLOTS.default,
                     help=f"requests decoded at once (default {limits.SLOTS.default})")
    add_context(run)
    run.add_argument("--pacing", choices=tuple(limits.PACING), default=limits.PACING_DEFAULT,
                     help=PACING_HELP)
    run.add_argument("--spec-draft", metavar="FILE",
                     help="a draft model (GGUF sharing the model's vocabulary) for lines whose \"speculative\" has "
                     "\"kind\": \"draft\" and no \"draft_model\" of their own, and for panes of kind draft model "
                     "without a file (as llama-server's -md)")
    run.add_argument("--tool-format", choices=("auto", "template", "generic"), default="auto",
                     help="how the local model is offered tools: its template's own tool-call format, else llama.cpp's "
                     "generic JSON format (auto); only the template's own (template); always the generic one (generic)")
    run.add_argument("--embedder", metavar="local|PATH.gguf|URL",
                     help="--report: the embedding model that clusters the answers of requests differing only by "
                     f"seed (default: {DEFAULT_EMBEDDER}, the main model, a weak embedder)")
    mcp_cli.add_run_arguments(run)
    mcp_cli.add_parser(sub)
    evaluate = sub.add_parser("eval", help="run a promptfoo config (promptfooconfig.yaml): test cases × variants, "
                              "graded; exit 0 all passed, 100 some failed, 2 unusable config")
    evaluate.add_argument("config", help="the config file (promptfoo's YAML or JSON format)")
    evaluate.add_argument("-o", "--output", action="append", metavar="PATH",
                          help="write results: .json (promptfoo v3), .jsonl, .yaml, .csv, .html or .xml (JUnit); "
                          "repeatable (default: the config's outputPath)")
    target = evaluate.add_mutually_exclusive_group()
    target.add_argument("--model", help="run every provider on this GGUF file (each keeps its label and settings)")
    target.add_argument("--server", metavar="URL", help="run every provider on this OpenAI-compatible server")
    evaluate.add_argument("--server-model", metavar="NAME", help="--server: the model to ask for (default: its first)")
    evaluate.add_argument("--judge", metavar="local|PATH.gguf|URL",
                          help="the default judge of model-graded assertions (default: local, the main model)")
    evaluate.add_argument("--embedder", metavar="local|PATH.gguf|URL",
                          help="the embedding model of `similar` and of --repeat's stability report: a GGUF "
                          "pooled locally, or a server's "
                          f"/v1/embeddings (default: {DEFAULT_EMBEDDER}, the main model, a weak embedder)")
    evaluate.add_argument("--repeat", type=int, metavar="N",
                          help="run every test case N times (default: the config's, else 1)")
    evaluate.add_argument("--max-concurrency", type=int, metavar="N",
                          help="requests in flight at once, judges included (default: the config's, else all)")
    evaluate.add_argument("--slots", type=int, default=limits.SLOTS.default, metavar="N",
                          help=f"sequences each local engine decodes at once (default {limits.SLOTS.default})")
    add_context(evaluate)
    mcp_cli.add_consent(evaluate)
    evaluate.add_argument("--allow-code", action="store_true",
                          help="run the config's code: javascript/python checks and transforms (read it first)")
    evaluate.add_argument("--no-cache", action="store_true",
                          help="no prompt-KV reuse in local engines (cold latencies); no result is ever cached")
    compare = sub.add_parser("eval-compare", help="compare two runs of an evaluation (results.json files): flipped "
                             "cells and an exact McNemar test per variant; exit 100 when one got significantly worse")
    compare.add_argument("old", help="the earlier run's results.json (promptfoo's v3 layout)")
    compare.add_argument("new", help="the later run's results.json")
    compare.add_argument("--alpha", type=_probability, default=COMPARE_ALPHA,
                         help="significance level of each variant's test (default %(default)s)")
    arena = sub.add_parser("arena-report", help="the arena's leaderboard from a session file's votes")
    arena.add_argument("session", help="a session file (*.chorus.json) with a top-level \"votes\" list")
    arena.add_argument("--html", metavar="OUT.html", help="also write a self-contained HTML report with the plot")
    arena.add_argument("--seed", type=int, default=ARENA_SEED, help="bootstrap seed (default %(default)s)")
    arena.add_argument("--rounds", type=int, default=BOOTSTRAP_ROUNDS.default,
                       help="bootstrap rounds behind the 95 %% intervals (default %(default)s)")
    quant_parsers(sub)
    return parser


def add_context(parser) -> None:
    """`--context N`: what each local slot holds, as the window's "Context per slot" setting."""
    parser.add_argument("--context", type=int, default=limits.CONTEXT_PER_SLOT.default, metavar="N",
                        help="tokens each slot of a local model holds, prompt plus reply (default "
                             f"{limits.CONTEXT_PER_SLOT.default}); a longer prompt ends with a context error")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].endswith(".json") and not argv[0].startswith("-"):  # "Open with Chorus" from a desktop
        argv = ["--session", argv[0], *argv[1:]]
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "run":
        from app.cli.run import run_command

        return run_command(args)
    if args.command == "mcp":
        return mcp_cli.mcp_command(args)
    if args.command == "eval":
        from app.cli.eval import eval_command

        return eval_command(args)
    if args.command == "bench":
        from app.bench.cli import run_bench

        gui, png = None, None
        if args.gui:  # the window's parts, only when asked for: the benchmark itself never imports Qt
            from app.ui.bench_window import measure_gui as gui
        if args.scale and args.png:
            from app.ui.stats.scaling_plot import write_png as png
        if args.panes:
            from app.bench.cli import run_panes_bench
            from app.ui.bench_panes import describe_panes, measure_panes

            return run_panes_bench(args, measure_panes, describe_panes)
        if args.soak:
            from app.bench.cli import run_soak_bench
            from app.ui.bench_soak import measure_soak, write_soak_png

            return run_soak_bench(args, measure_soak, write_soak_png)
        return run_bench(args, measure_gui=gui, write_png=png)
    if args.command == "eval-compare":
        from app.cli.eval_compare import eval_compare_command

        return eval_compare_command(args)
    if args.command in ("kld", "perplexity"):
        from app.cli.quant import kld_command, perplexity_command

        return (kld_command if args.command == "kld" else perplexity_command)(args)
    if args.command == "arena-report":
        from app.cli.arena_report import arena_report_command

        return arena_report_command(args)
    if args.self_test:
        from app.ui.self_test import run_self_test

        return run_self_test(model=args.model, expect_gpu_offload=args.expect_gpu_offload)
    from app.ui.application import run_gui

    return run_gui(model=args.model, session_file=args.session, run_all=args.run_all,
                   print_restored=args.print_restored)


if __name__ == "__main__":
    sys.exit(main())
