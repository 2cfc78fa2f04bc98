"""`bench --quant`: the fidelity run's speed against llama-perplexity's, on the same text, models and context.

One pair per repetition, back to back, order alternating: Chorus's teacher-forced pass (`app.quant.compare`:
the reference and a candidate, loads included) and llama-perplexity's two passes for the same figures (the
reference writing its base file, then `--kl-divergence` of the candidate), both timed on the wall. The figure is
the median of the per-pair ratios of tokens per second (tokens decoded by both models ÷ wall time), so the goal
≥ 0.8 reads directly. A second figure does the same for one model's perplexity. The candidate is the embedded
model requantized to Q4_0 by llama-quantize; `make llama-server` builds both tools.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from app.bench import llama_tools
from app.bench.pairs import figure, reference_first
from app.quant import compare, perplexity

CTX = 512  # llama-perplexity's default
CHUNKS = {"full": 16, "quick": 4}
CANDIDATE = "Q4_0"
_ROOT = Path(__file__).resolve().parents[2]


def bench_text(min_chars: int) -> str:
    """The guide (an English text) when the source tree is there, repeated to length; else a fixed filler."""
    guide = _ROOT / "docs" / "guide.md"
    text = guide.read_text(encoding="utf-8") if guide.is_file() else (
        "The river rose slowly through the night, and by morning the lower fields were under water. ")
    return (text * (min_chars // len(text) + 1))[:min_chars]


def quant_bench(model: Path, threads: int, repetitions: int, quick: bool = False, ctx: int = CTX,
                chunks: int | None = None, on_run: Callable[[str], None] | None = None,
                in_thread: Callable | None = None) -> dict:
    """{"kld": figure of ours ÷ llama-perplexity's tokens per second, "perplexity": the same for one model, "runs":
    each pair's seconds, "ctx", "chunks", "tokens", "candidate", "path"}. `in_thread(fn, *args)` runs a
    measurement of ours on a fresh thread (app.bench.measure.in_fresh_thread)."""
    missing = llama_tools.missing_tools("llama-perplexity", "llama-quantize")
    if missing:
        raise RuntimeError(f"{', '.join(missing)} not built: run `make llama-server`")
    chunks = chunks or CHUNKS["quick" if quick else "full"]
    run = in_thread or (lambda fn, *a, **k: fn(*a, **k))
    with tempfile.TemporaryDirectory(prefix="chorus-bench-quant-") as folder:
        folder = Path(folder)
        candidate = llama_tools.quantize(model, folder / f"candidate-{CANDIDATE.lower()}.gguf", CANDIDATE, threads)
        text = bench_text(chunks * ctx * 6)  # ~4 characters a token: a margin, then cut to whole chunks below
        text_file = folder / "text.txt"
        text_file.write_text(text, encoding="utf-8")
        kld_pairs, ppl_pairs, runs, report = [], [], [], None
        for rep in range(1, repetitions + 1):
            def ours():
                started = time.perf_counter()
                result = run(compare, model, [candidate], text=text, n_ctx=ctx, threads=threads)
                return result, time.perf_counter() - started

            def theirs():
                base = folder / "base.bin"
                first = llama_tools.perplexity_of(model, text_file, ctx, threads, base_file=base)
                second = llama_tools.kl_divergence(candidate, text_file, ctx, threads, base)
                base.unlink()
                return first["seconds"] + second["seconds"]

            order = ("theirs", "ours") if reference_first(rep) else ("ours", "theirs")
            seconds = {}
            for side in order:
                if on_run:
                    on_run(f"quant kld {side} {rep}/{repetitions}")
                if side == "ours":
                    report, seconds["ours"] = ours()
                else:
                    seconds["theirs"] = theirs()
            kld_pairs.append(seconds["theirs"] / seconds["ours"])  # same tokens: the rates' ratio
            ppl_seconds = {}
            for side in order:
                if on_run:
                    on_run(f"quant perplexity {side} {rep}/{repetitions}")
                if side == "ours":
                    started = time.perf_counter()
                    run(perplexity, model, text, n_ctx=ctx, threads=threads)
                    ppl_seconds["ours"] = time.perf_counter() - started
                else:
                    ppl_seconds["theirs"] = llama_tools.perplexity_of(model, text_file, ctx, threads)["seconds"]
            ppl_pairs.append(ppl_seconds["theirs"] / ppl_seconds["ours"])
            runs.append({"kld_seconds": seconds, "perplexity_seconds": ppl_seconds})
    tokens = len(report.sequences) * ctx
    return {"kld": figure(kld_pairs), "perplexity": figure(ppl_pairs), "runs": runs, "ctx": ctx,
            "chunks": len(report.sequences), "tokens": tokens, "candidate": CANDIDATE, "path": report.path,
            "tokens_per_second": report.tokens_per_second}


def format_quant(result: dict) -> str:
    k, p = result["kld"], result["perplexity"]
    return (f"Quantization fidelity, {result['chunks']} chunks of {result['ctx']} tokens, reference + "
            f"{result['candidate']} candidate (reference kept: {result['path']}):\n"
            f"  KLD pass ÷ llama-perplexity (tokens/s): {k['median']:.2f} over {len(k['pairs'])} pair(s)\n"
            f"  perplexity ÷ llama-perplexity (tokens/s): {p['median']:.2f} over {len(p['pairs'])} pair(s)")
