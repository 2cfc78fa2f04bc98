"""Where a constrained decode step's time goes: llama_decode vs sampling (grammar or schema, chain, text, events).

Backs docs/engine.md, "Constrained output" ("Where the time went, and goes").
A dated probe: it ran against the code of its date and may reach internals that have moved since.

Runs the bench's fixed-length greedy workload (the bench prompts, end-of-generation banned) at N = 1, 8, 16 as
free text, under the bench grammar and under the bench JSON schema, with the engine's `_timed_decode` and
`_advance` wrapped in timers, and prints per steady decode step (decode tokens only, no prompt; medians):
t/s (N over the step's wall time, end to end), llama_decode ms, mask wait, sampling ms (wall),
the engine thread's CPU ms while sampling (robust to a busy host) and that per sequence. Kinds run interleaved
(free, grammar, schema, free, ...) so a busy spell on the host hits all alike. Seeded sampling (temperature 0.8,
top-k 40) with `--sampled`; the earlier path (grammar sampler first) beside today's with `--reference`.

    PYTHONPATH=. python scripts/probes/2026-11-23-constrained-profile.py [--sizes 1 8 16] [--tokens 64] [--reps 1]
        [--sampled]
        [--reference]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

from app.bench.constrained import BENCH_SCHEMA, FREE_GRAMMAR
from app.bench.workloads import GREEDY, prompt_of_length
from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams, step
from app.engine.native import LlamaModel
from app.engine.sampling import chain as sampling
from app.engine.sampling import masks
from app.models import default_model_path

TIMES: dict[str, list[float]] = defaultdict(list)
_decode, _advance = step.Step.timed_decode, step.Step.advance


def timed_decode(self, outputs=()):
    started = time.perf_counter()
    rc, elapsed = _decode(self, outputs)
    TIMES["decode"].append(elapsed)
    TIMES["mask_wait"].append(time.perf_counter() - started - elapsed)  # masks not ready when the decode ended
    return rc, elapsed


def timed_advance(self, plan, outputs, events):
    started, cpu = time.perf_counter(), time.thread_time()
    _advance(self, plan, outputs, events)
    ended = time.perf_counter()
    steady = bool(plan.decode) and not plan.prefill
    if steady:  # decode tokens only, no prompt in the step (at large N use enough tokens that all overlap)
        TIMES["sample"].append(ended - started)
        TIMES["sample_cpu"].append(time.thread_time() - cpu)  # the engine thread's own CPU: robust to host load
        if TIMES["last_end"] and TIMES["last_steady"][-1]:
            TIMES["step"].append(ended - TIMES["last_end"][-1])  # one whole steady step, end to end
    TIMES["last_end"].append(ended)
    TIMES["last_steady"].append(steady)


def run(path, prompts, max_tokens: int, fields: dict) -> None:
    config = EngineConfig(model_path=path, n_slots=len(prompts), n_ctx_per_slot=max_tokens + 128,
                          n_threads=os.cpu_count() or 2)
    with Engine(config) as engine:
        handles = [engine.submit(GenerationRequest(prompt=p, max_tokens=max_tokens, ignore_eos=True,
                                                   **{"sampling": GREEDY, **fields})) for p in prompts]
        failed = [r.error for r in (h.result(timeout=3600) for h in handles) if r.finish_reason == "error"]
        if failed:
            raise RuntimeError(failed[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--sampled", action="store_true")
    parser.add_argument("--reference", action="store_true", help="also the earlier path (grammar sampler first)")
    parser.add_argument("--no-overlap", action="store_true", help="masks after the decode, not during it")
    args = parser.parse_args()
    step.Step.timed_decode, step.Step.advance = timed_decode, timed_advance
    masks.OVERLAP = not args.no_overlap
    path = default_model_path()
    model = LlamaModel(path)
    prompts = [prompt_of_length(model, 64, i) for i in range(max(args.sizes))]
    model.close()
    kinds = {"free": {}, "grammar": {"grammar": FREE_GRAMMAR}, "schema": {"json_schema": BENCH_SCHEMA}}
    if args.reference:  # the same requests on the earlier path (grammar sampler first in the chain)
        kinds.update({"grammar-ref": kinds["grammar"], "schema-ref": kinds["schema"]})
    if args.sampled:
        params = SamplingParams(temperature=0.8, seed=7)
        kinds = {k: {**v, "sampling": params} for k, v in kinds.items()}
    rows = defaultdict(list)
    loads = []
    for _ in range(args.reps):
        for n in args.sizes:
            for kind, fields in kinds.items():
                TIMES.clear()
                sampling.GRAMMAR_FIRST = kind.endswith("-ref")
                loads.append(os.getloadavg()[0])
                run(path, prompts[:n], args.tokens, fields)
                steps = len(TIMES["sample"])
                step_s = (statistics.median(TIMES["step"]) if TIMES["step"]  # else: decode + sampling
                          else statistics.median(TIMES["decode"]) + statistics.median(TIMES["sample"]))
                tps = n / step_s
                decode_ms = 1000 * statistics.median(TIMES["decode"][-steps:])
                wait_ms = 1000 * statistics.median(TIMES["mask_wait"][-steps:])
                sample_ms = 1000 * statistics.median(TIMES["sample"])
                cpu_ms = 1000 * statistics.median(TIMES["sample_cpu"])
                rows[n, kind].append((tps, decode_ms, wait_ms, sample_ms, cpu_ms, cpu_ms / n))
                print(f"  {n} {kind}: {rows[n, kind][-1]} load {loads[-1]:.1f}", file=sys.stderr, flush=True)
    print(f"host load (1-min average) during the runs: {min(loads):.1f}-{max(loads):.1f}\n"
          f"{'N':>3} {'kind':>11} {'t/s':>7} {'decode ms':>10} {'mask wait':>10} {'sample ms':>10} "
          f"{'sample CPU ms':>14} {'CPU/seq ms':>11} {'vs free':>8}")
    for (n, kind), values in rows.items():
        tps, decode_ms, wait_ms, sample_ms, cpu_ms, per_seq = (statistics.median(v) for v in zip(*values, strict=True))
        free = statistics.median(v[0] for v in rows[n, "free"])
        print(f"{n:>3} {kind:>11} {tps:>7.1f} {decode_ms:>10.2f} {wait_ms:>10.2f} {sample_ms:>10.2f} {cpu_ms:>14.2f} "
              f"{per_seq:>11.3f} {tps / free:>8.3f}")


if __name__ == "__main__":
    main()
