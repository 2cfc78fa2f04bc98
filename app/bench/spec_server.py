"""`bench --spec`'s peer: Chorus's n-gram drafts against llama-server's own n-gram `--spec-type`s, same workload.

For each copy-heavy workload at N = 1 (spec_bench's "copy" and "extract" requests, greedy), one repetition runs
Chorus's engine with speculation on and llama-server once per n-gram spec type (and once with none, for
context), back to back, the order alternating between repetitions (pairs.py). Chorus runs twice: in its
default (reproducible) mode, the figure, and with reproducible mode off, its profile: reproducible mode's
per-row attention kernel (docs/engine.md, "Reproducible outputs") costs the prompt's prefill, which drafts
cannot speed up, so the two runs' first-token times (`ttft_s`, beside llama-server's own `prompt_ms`) show what
of the gap is that kernel. A run is timed from sending the
request to its last token, prefill included, with llama-server's prompt cache off for the request
(`cache_prompt: false`) as Chorus's is cleared before each run. The figure is the median of the per-repetition
ratios Chorus ÷ the spec type that was fastest over all repetitions; "decode" the same from the first token on
(llama-server's `predicted_per_second`), prefill left out.

llama-server is the one `make llama-server` built from the vendored llama.cpp; without it the peer is skipped
and says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import tempfile
import time
import urllib.request
from pathlib import Path

from app.bench.eval_suite import llama_server_path, start_llama_server
from app.bench.pairs import figure, reference_first
from app.bench.speculative import copy_request, extract_request, timed
from app.bench.workloads import median
from app.engine import Engine, EngineConfig, Speculation

SPEC_TYPES = ("none", "ngram-simple", "ngram-map-k", "ngram-mod", "ngram-cache")  # llama-server's n-gram kinds
CHORUS = {"chorus": True, "chorus, reproducible off": False}  # Chorus's runs: EngineConfig.reproducible
WORKLOADS = {"copy N=1": lambda spec: copy_request(0, spec), "extract N=1": extract_request}
N_CTX = 2048


def _server_run(url: str, request) -> dict:
    """One greedy chat completion on llama-server: tokens per second of wall time and its drafts."""
    body = {"messages": request.messages, "max_tokens": request.max_tokens, "temperature": 0.0,
            "cache_prompt": False, "stream": False}
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=900) as reply:
        answer = json.loads(reply.read())
    wall = time.perf_counter() - started
    tokens = answer["usage"]["completion_tokens"]
    timings = answer.get("timings", {})
    return {"tps": tokens / wall, "tokens": tokens, "decode_tps": timings.get("predicted_per_second", 0.0),
            "ttft_s": timings.get("prompt_ms", 0.0) / 1000, "drafted": timings.get("draft_n", 0),
            "accepted": timings.get("draft_n_accepted", 0)}


def _with_server(binary: Path, model: Path, threads: int, spec_type: str, folder: Path, fn):
    extra = [] if spec_type == "none" else ["--spec-type", spec_type]
    proc, url = start_llama_server(binary, model, threads, 1, N_CTX, folder / f"llama-server-{spec_type}.log",
                                   extra=extra)
    try:
        return fn(url)
    finally:
        proc.terminate()
        proc.wait(30)


def spec_server_bench(model_path: Path, threads: int, repetitions: int = 3, on_run=None) -> dict:
    """Per workload: every run's figures, the fastest llama-server spec type, and Chorus ÷ it as pairs."""
    binary = llama_server_path()
    if not binary.is_file():
        return {"note": f"llama-server is not built ({binary}): run `make llama-server` for the comparison"}
    samples: dict[str, dict[str, list[dict]]] = {name: {} for name in WORKLOADS}
    config = EngineConfig(model_path=model_path, n_slots=1, n_ctx_per_slot=N_CTX, n_threads=threads)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        engines = {kind: stack.enter_context(Engine(dataclasses.replace(config, reproducible=reproducible)))
                   for kind, reproducible in CHORUS.items()}
        for rep in range(1, repetitions + 1):
            order = [*CHORUS, *SPEC_TYPES]
            for kind in order[::-1] if reference_first(rep) else order:
                if on_run:
                    on_run(f"rep {rep}: {_label(kind)}")
                if kind in engines:
                    for name, make in WORKLOADS.items():
                        samples[name].setdefault(kind, []).append(timed(engines[kind], [make(Speculation(mode="on"))]))
                    continue

                def runs(url):
                    return {name: _server_run(url, make(None)) for name, make in WORKLOADS.items()}
                for name, run in _with_server(binary, model_path, threads, kind, Path(tmp), runs).items():
                    samples[name].setdefault(kind, []).append(run)
    out = {}
    for name, by_kind in samples.items():
        rates = {kind: median([r["tps"] for r in runs]) for kind, runs in by_kind.items()}
        best = max(SPEC_TYPES[1:], key=lambda kind: rates[kind])
        decode = {kind: median([r["decode_tps"] for r in runs]) for kind, runs in by_kind.items()}
        fastest = max(SPEC_TYPES[1:], key=lambda kind: decode[kind])
        ttft = {kind: median([r["ttft_s"] for r in runs]) for kind, runs in by_kind.items()}
        figures = {kind: {**_pairs(by_kind[kind], by_kind[best], "tps"),
                          "decode": _pairs(by_kind[kind], by_kind[fastest], "decode_tps")} for kind in CHORUS}
        out[name] = {"best_spec_type": best, "tps": rates, **figures["chorus"], "decode_tps": decode,
                     "decode": {"best_spec_type": fastest, **figures["chorus"]["decode"]}, "ttft_s": ttft,
                     "reproducible_off": figures["chorus, reproducible off"], "runs": by_kind}
    return out


def _pairs(ours: list[dict], theirs: list[dict], key: str) -> dict:
    return figure([a[key] / b[key] for a, b in zip(ours, theirs, strict=True)])


def _label(kind: str) -> str:
    return f"Chorus spec on{kind.removeprefix('chorus')}" if kind in CHORUS else f"llama-server {kind}"


def format_spec_server(result: dict) -> str:
    if "note" in result:
        return "Against llama-server's --spec-type: " + result["note"]
    lines = ["Chorus (spec on) ÷ llama-server with its fastest n-gram --spec-type, N = 1 (median of pairs):"]
    for name, r in result.items():
        rates = ", ".join(f"{kind} {tps:.1f}" for kind, tps in r["tps"].items())
        off = r["reproducible_off"]
        lines.append(f"  {name:<12} {r['median']:.2f}x vs {r['best_spec_type']}  pairs "
                     f"{', '.join(f'{p:.2f}' for p in r['pairs'])}; reproducible off {off['median']:.2f}x  "
                     f"(t/s: {rates})")
        decode = ", ".join(f"{kind} {tps:.1f}" for kind, tps in r["decode_tps"].items())
        lines.append(f"  {'':<12} decode only: {r['decode']['median']:.2f}x vs {r['decode']['best_spec_type']}, "
                     f"reproducible off {off['decode']['median']:.2f}x  (t/s after the first token: {decode})")
        ttft = ", ".join(f"{kind} {1000 * s:.0f}" for kind, s in r["ttft_s"].items())
        lines.append(f"  {'':<12} first token, ms (llama-server: its prompt_ms): {ttft}")
    return "\n".join(lines)
