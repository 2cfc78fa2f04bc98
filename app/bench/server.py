"""`bench --server URL`: the throughput scenario through the Backend protocol, for Chorus's engine and a server.

Both are driven and timed by the same code (submit N fixed-length greedy requests, read the step events they
publish), so the ratio compares engines, not measuring methods. The figure is the aggregate decode rate while
all N generate together, as in the main benchmark. Start the server with the same model and threads, e.g.
`llama-server -m MODEL.gguf -np 8 -t 2 -c 4096 --metrics`. The server's tokens reach Chorus over HTTP through the
openai client on this machine, which shares the cores with the server; the engine's need no transport.
"""

from __future__ import annotations

import sys

from app.backends import LocalBackend, OpenAIBackend
from app.bench.pairs import figure, ratios, reference_first
from app.bench.scenarios import steady_decode_tps
from app.bench.table import write_json
from app.bench.workloads import median, prompt_of_length
from app.engine import EngineConfig
from app.engine.native import LlamaModel
from app.models import default_model_path

SIZES = (4, 8)


def _local(model_path, prompts, max_tokens, threads, n_ctx) -> float:
    config = EngineConfig(model_path=model_path, n_slots=len(prompts), n_ctx_per_slot=n_ctx, n_threads=threads)
    with LocalBackend(config) as backend:
        return steady_decode_tps(backend, prompts, max_tokens)


def _server(url, model, prompts, max_tokens) -> float:
    backend = OpenAIBackend(url, model=model, max_concurrency=len(prompts))
    try:
        return steady_decode_tps(backend, prompts, max_tokens)
    finally:
        backend.close()


def run_server_bench(args, threads: int, progress_cls, max_tokens: int = 96, repetitions: int = 3) -> int:
    """Engine vs server at N = 4 and 8, repetitions interleaved; prints a table, writes --json."""
    repetitions = 1 if args.quick else repetitions
    model_path = default_model_path()
    model = LlamaModel(model_path)
    prompts = [prompt_of_length(model, 64, i) for i in range(max(SIZES))]
    model.close()
    probe = OpenAIBackend(args.server, model=args.server_model)
    try:
        probe.connect()
    except ConnectionError as exc:
        print(f"chorus bench: {exc}", file=sys.stderr)
        return 2
    finally:
        probe.close()
    server_model = probe.model_info.model
    progress = progress_cls(2 * len(SIZES) * repetitions)
    samples: dict[tuple[str, int], list[float]] = {}
    for rep in range(1, repetitions + 1):
        for n in SIZES:
            tag = f"rep {rep}/{repetitions} N={n}"
            runs = [("engine", f"{tag} Chorus engine", _local, (model_path, prompts[:n], max_tokens, threads,
                                                                 64 + max_tokens + 64)),
                    ("server", f"{tag} {args.server}", _server, (args.server, server_model, prompts[:n], max_tokens))]
            for kind, label, fn, fn_args in runs[::-1] if reference_first(rep) else runs:  # a pair, alternating
                samples.setdefault((kind, n), []).append(progress.run(label, fn, *fn_args))
    engine = {str(n): median(samples["engine", n]) for n in SIZES}
    server = {str(n): median(samples["server", n]) for n in SIZES}
    pairs = {f"engine_vs_server_{n}": figure(ratios(samples["engine", n], samples["server", n])) for n in SIZES}
    result = {"model": model_path.name, "threads": threads, "server": args.server, "server_model": server_model,
              "throughput": {"engine": engine, "server": server},
              "ratios": {"engine_vs_server": {str(n): pairs[f"engine_vs_server_{n}"]["median"] for n in SIZES}},
              "pairs": pairs,
              "setup": {"prompt_tokens": 64, "max_tokens": max_tokens, "repetitions": repetitions},
              "samples": {f"{k[0]}_{k[1]}": v for k, v in samples.items()}}
    print(f"Chorus engine vs {args.server} ({server_model}), {threads} threads, median of {repetitions} run(s)\n")
    print(f"{'N':>4} {'engine t/s':>11} {'server t/s':>11} {'engine/server':>14}")
    for n in engine:
        print(f"{n:>4} {engine[n]:>11.1f} {server[n]:>11.1f} {result['ratios']['engine_vs_server'][n]:>14.3f}")
    if args.json:
        write_json(args.json, result)
    return 0
