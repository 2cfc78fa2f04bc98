"""What a speculative verify step costs, and where a copy or extraction request's time goes.

Backs docs/engine.md, "Speculative decoding" ("What a verify step costs"), and
docs/investigations/2026-11-26-speculative-verify-cost.md.
A dated probe: it ran against the code of its date and may reach internals that have moved since.

Part 1 (`--rows`), raw contexts like the engine's (8 slots, flash attention on, n_batch = 128), one with ggml's
per-row kernels (`use_ref`) and one with its default kernels: slot 0 holds a ~`--prompt`-token prompt; a run of
1 + k tokens is decoded at its end (every token an output, as a verify run; and only the last an output), then
trimmed; medians of `--reps` in alternating order. Also whether each row's logits are bit-identical to the same
token decoded one at a time (does a verify run give the bits of a lone token?).

Part 2 (`--engine`): the engine with `bench --spec`'s copy and extract requests (N = 1, greedy, 8 slots), spec
off and on alternating: wall, first token, the decode time inside llama_decode, steps, drafts by length and
acceptance by draft position.

    python scripts/probes/2026-11-26-spec-verify.py [--rows] [--engine] [--pairs 2]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import llama_cpp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.engine.context import TokenBatch  # noqa: E402

# the lone-token probe's helpers: same folder, loaded by path (a dated file name is not a module name)
_spec = importlib.util.spec_from_file_location("lone_token", Path(__file__).with_name("2026-11-26-lone-token.py"))
lone_token = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lone_token)
make_context = lone_token.make_context


def run(ctx, batch: TokenBatch, tokens, pos: int, all_outputs: bool) -> float:
    batch.clear()
    batch.add(tokens, pos, 0, True, output_all=all_outputs)
    batch.struct.n_tokens = batch.n_tokens
    started = time.perf_counter()
    assert llama_cpp.llama_decode(ctx, batch.struct) == 0
    return time.perf_counter() - started


def trim(ctx, keep: int) -> None:
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), 0, keep, -1)


def rows_probe(model, prompt: list[int], reps: int, ks: list[int]) -> None:
    batch = TokenBatch(128)
    contexts = {"use_ref": make_context(model, "on", True, slots=8, cells=2048),
                "default": make_context(model, "on", False, slots=8, cells=2048)}
    n = len(prompt) - 40
    for ctx in contexts.values():
        for start in range(0, n, 128):
            run(ctx, batch, prompt[start:min(n, start + 128)], start, False)
    times = {(name, k, a): [] for name in contexts for k in ks for a in (True, False)}
    for rep in range(reps):
        for name in (list(contexts) if rep % 2 == 0 else list(contexts)[::-1]):
            ctx = contexts[name]
            for k in ks:
                for all_outputs in (True, False):
                    times[(name, k, all_outputs)].append(run(ctx, batch, prompt[n:n + 1 + k], n, all_outputs))
                    trim(ctx, n)
    for name in contexts:
        base = statistics.median(times[(name, 0, True)])
        for k in ks:
            t_all, t_last = (statistics.median(times[(name, k, a)]) for a in (True, False))
            print(f"{name:8} 1+{k:<2} rows: all outputs {t_all * 1e3:6.2f} ms (x{t_all / base:.2f} a lone token, "
                  f"{(t_all - base) * 1e3 / max(k, 1):.2f} ms a drafted row), last output only {t_last * 1e3:6.2f} ms",
                  flush=True)
    # bits: each row of a 1+16 run vs the same token decoded one at a time
    nv = model.n_vocab
    for name, ctx in contexts.items():
        run(ctx, batch, prompt[n:n + 17], n, True)
        together = [np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), shape=(nv,)).copy()
                    for i in range(17)]
        trim(ctx, n)
        diffs = []
        for i in range(17):
            run(ctx, batch, prompt[n + i:n + i + 1], n + i, True)
            alone = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, 0), shape=(nv,))
            diffs.append(float(np.max(np.abs(alone - together[i]))))
        trim(ctx, n)
        print(f"{name}: verify rows vs one at a time at {n}..{n + 16} cells: "
              f"{'IDENTICAL' if not any(diffs) else 'max |diff| ' + ', '.join(f'{d:.2g}' for d in diffs)}", flush=True)
    for ctx in contexts.values():
        llama_cpp.llama_free(ctx)


def engine_probe(model_path, pairs: int, workloads: list[str]) -> None:
    from app.bench.speculative import copy_request, extract_request, free_request
    from app.engine import Engine, EngineConfig, Speculation
    from app.engine.speculative.step import SpeculativeStep
    from app.engine.step import Step

    log: dict = {"decodes": [], "verify": []}
    original_decode, original_verify = Step.timed_decode, SpeculativeStep.verify

    def timed_decode(self, outputs=()):
        rc, elapsed = original_decode(self, outputs)
        log["decodes"].append((self._ctx.batch.n_tokens, elapsed))
        return rc, elapsed

    def verify(self, seq, first, draft, now, events):
        before = seq.spec.accepted
        generated = original_verify(self, seq, first, draft, now, events)
        log["verify"].append((len(draft), seq.spec.accepted - before))
        return generated

    Step.timed_decode, SpeculativeStep.verify = timed_decode, verify
    makes = {"copy": lambda s: copy_request(0, s), "extract": extract_request, "free": free_request}
    with Engine(EngineConfig(model_path=model_path, n_slots=8, n_threads=2)) as engine:
        for name in workloads:
            summary = collections.defaultdict(list)
            for rep in range(pairs):
                order = [None, Speculation(mode="on")] if rep % 2 == 0 else [Speculation(mode="on"), None]
                for spec in order:
                    engine.clear_prompt_cache()
                    engine.wait_idle(60)
                    log["decodes"].clear(), log["verify"].clear()
                    started = time.perf_counter()
                    result = engine.submit(makes[name](spec)).result(600)
                    wall = time.perf_counter() - started
                    decode_s = sum(t for _, t in log["decodes"])
                    first = result.ttft_s
                    after = [t for n, t in log["decodes"]]
                    label = "on" if spec else "plain"
                    lengths = collections.Counter(d for d, _ in log["verify"])
                    by_pos = collections.Counter()
                    tried = collections.Counter()
                    for d, a in log["verify"]:
                        for j in range(d):
                            tried[j] += 1
                            by_pos[j] += j < a
                    summary[label].append(result.generated_tokens / wall)
                    print(f"{name} {label}: {result.generated_tokens} tokens, wall {wall:.3f} s, first token "
                          f"{first:.3f} s, {len(after)} decodes {decode_s:.3f} s (outside llama_decode "
                          f"{wall - decode_s:.3f} s), {result.generated_tokens / wall:.1f} t/s wall, "
                          f"{(result.generated_tokens - 1) / (wall - first):.1f} t/s decode; drafted "
                          f"{result.drafted_tokens} accepted {result.accepted_tokens}", flush=True)
                    if spec:
                        print(f"  runs {len(log['verify'])}, draft lengths {sorted(lengths.items())}", flush=True)
                        print("  acceptance by position: " + ", ".join(
                            f"{j + 1}:{by_pos[j]}/{tried[j]}" for j in sorted(tried)), flush=True)
                        print("  runs (drafted, accepted): " + " ".join(f"{d}/{a}" for d, a in log["verify"]),
                              flush=True)
                        sizes = collections.defaultdict(list)
                        for n, t in log["decodes"]:
                            sizes[n].append(t)
                        print("  decode ms by batch size: " + ", ".join(
                            f"{n}:{statistics.median(v) * 1e3:.1f}x{len(v)}" for n, v in sorted(sizes.items())),
                            flush=True)
            ratios = [a / b for a, b in zip(summary["on"], summary["plain"], strict=True)]
            print(f"{name}: on/plain wall " + ", ".join(f"{r:.3f}" for r in ratios), flush=True)
    Step.timed_decode, SpeculativeStep.verify = original_decode, original_verify


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", action="store_true")
    parser.add_argument("--engine", action="store_true")
    parser.add_argument("--workloads", nargs="+", default=["copy", "extract"])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 1, 2, 4, 8, 16, 32])
    args = parser.parse_args()
    from app.bench.speculative import passage
    from app.engine.native import LlamaModel, init_backend
    from app.models import default_model_path
    if args.rows:
        init_backend()
        model = LlamaModel(default_model_path())
        prompt = model.tokenize("Rewrite the following passage exactly: " + passage(0) + " " + passage(3), True)
        rows_probe(model, prompt[:400], args.reps, args.ks)
    if args.engine:
        engine_probe(default_model_path(), args.pairs, args.workloads)


if __name__ == "__main__":
    main()
