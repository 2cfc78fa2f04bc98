"""Images in the engine, measured. No assertions: figures.

Backs docs/benchmarks.md, "Images" (the latest figures), and docs/investigations/2026-11-26-images.md (the
profiles and fixes behind them); docs/images.md cites its non-causal figure. Written against the engine of
2026-11-26: `--trace` wraps private engine methods that have moved since, so it may need adapting to run.

1. 8 panes, 8 different questions about one image (image first), submitted together: the last pane's time to
   first token ÷ one pane's alone (the cache cleared between), and how many times the image was encoded.
2. 4 panes streaming text while a fifth request's image is prefilled: the p99 of the 4 streams' inter-token
   gaps from the image's submission to its first token, ÷ their median gap before it (steady).
`--only a` / `--only b` runs one of the two. `--server URL` also times a llama-server started on the same two
files (`$(bash scripts/build_llama_server.sh) -m MODEL --mmproj MMPROJ -np 8 -c 8192 -t 2 --port 8080`, then
`--server http://127.0.0.1:8080/v1`) on figure 1's 8 requests. `--trace` prints figure 1's timeline instead: every
text llama_decode, image piece, prefix copy, admission and iteration, and when each pane got its first token
(`--alone`: one pane alone first).

The model pairs are the tests' (random weights; write them once, they print their paths):
- SmolLM2-135M with the tiny LLaVA-style projector: `python -m tests.fixtures.vision_gguf DIR [IMAGE_TOKENS]`
  (64 image tokens; the latest figures used 256, a real Gemma 3 image's count, decoded causally in pieces);
  the text model is the embedded one (`python -c "from app.models import default_model_path as p; print(p())"`).
- `python -m tests.fixtures.vision_qwen2vl DIR` (M-RoPE, `--size` sets the image's tokens: (size/8)^2) and
  `python -m tests.fixtures.vision_gemma3 DIR [IMAGE_TOKENS]` (Gemma 3 270M, a non-causal projector whose
  image decodes whole: `--max-batch-tokens 256` for 256 image tokens).
The images are seeded noise, `--size` pixels square.

    python scripts/probes/2026-11-26-images.py --model MODEL --mmproj MMPROJ [--threads 2] [--repeat 3]
        [--only a|b] [--server URL] [--size 48] [--max-batch-tokens N] [--trace [--alone]]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.backends import OpenAIBackend  # noqa: E402
from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams  # noqa: E402

GREEDY = SamplingParams(temperature=0.0)
QUESTIONS = ["What is in this image?", "Describe the colours.", "Is there any text?", "Count the shapes.",
             "What is the mood?", "Where was it taken?", "Who made it?", "Give it a title."]


def png(seed: int, size: int = 48) -> bytes:
    """A `size`-pixel square PNG of seeded noise (Qt's encoder; no window needed)."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QImage

    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8).tobytes()
    image = QImage(pixels, size, size, 3 * size, QImage.Format.Format_RGB888)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def about(image: bytes, question: str) -> GenerationRequest:
    """A greedy question about one image (the image first), 8 new tokens."""
    import base64

    url = "data:image/png;base64," + base64.b64encode(image).decode()
    parts = [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": question}]
    return GenerationRequest(messages=[{"role": "user", "content": parts}], max_tokens=8, sampling=GREEDY)


def fan_out(model, mmproj, threads: int, size: int = 48, **config) -> dict:
    image = png(1, size)
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=8, n_threads=threads,
                                **config)) as engine:
        engine.submit(about(png(0), "warm up")).result(300)
        engine.clear_prompt_cache()
        alone = engine.submit(about(image, QUESTIONS[0])).result(300)
        one = alone.ttft_s
        engine.clear_prompt_cache()
        store = engine._images.store
        store._drop(store.entry(max(store._by_serial)))  # encode it again, as cold
        engine.wait_idle(60)
        engine.reset_stats()
        done = [h.result(600) for h in [engine.submit(about(image, q)) for q in QUESTIONS]]
        stats = engine.stats()
    last = max(d.ttft_s for d in done)
    return {"one_ttft_s": one, "last_of_8_ttft_s": last, "ratio": last / one,
            "encoded": stats.images_encoded, "reused": stats.images_reused, "prompt_tokens": alone.prompt_tokens,
            "shared_tokens": min((d.cached_tokens for d in done if d.cached_tokens), default=0)}


def server_fan_out(url: str, size: int = 48) -> dict:
    """A llama-server started with the same files and `--mmproj`, `-np 8` on the same requests: one alone (another
    image), then the 8 sent at once, each timed to its first streamed token by the client (OpenAIBackend)."""
    backend = OpenAIBackend(url, max_concurrency=8)
    try:
        def ttfts(requests: list[GenerationRequest]) -> list[float]:
            return [h.result(600).ttft_s for h in [backend.submit(r) for r in requests]]

        ttfts([about(png(0), "warm up")])
        one = ttfts([about(png(3, size), QUESTIONS[0])])[0]
        last = max(ttfts([about(png(1, size), q) for q in QUESTIONS]))
    finally:
        backend.close()
    return {"one_ttft_s": one, "last_of_8_ttft_s": last, "ratio": last / one}


def gaps_while_image(model, mmproj, threads: int, **config) -> dict:
    times: dict[int, list[float]] = {}

    def on_step(event) -> None:
        for rid in event.tokens:
            times.setdefault(rid, []).append(event.time)

    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=5, n_threads=threads, **config)) as engine:
        engine.subscribe(on_step)
        streams = [engine.submit(GenerationRequest(messages=[{"role": "user", "content": f"Story {i}, please."}],
                                                   max_tokens=160, ignore_eos=True, sampling=GREEDY))
                   for i in range(4)]
        while min((len(times.get(h.id, [])) for h in streams), default=0) < 40:
            time.sleep(0.01)
        t_image = time.perf_counter()
        image = engine.submit(about(png(2), "What is this?")).result(300)
        t_first = t_image + image.ttft_s
        for h in streams:
            h.result(600)
    before, during = [], []
    for h in streams:
        t = np.asarray(times[h.id])
        gaps, ends = np.diff(t), t[1:]
        before += list(gaps[(ends < t_image) & (ends > t[10])])
        during += list(gaps[(ends >= t_image) & (ends <= t_first + 0.5 * np.median(gaps))])
    steady = float(np.median(before))
    return {"steady_gap_ms": steady * 1000, "p99_gap_during_image_ms": float(np.percentile(during, 99)) * 1000,
            "ratio": float(np.percentile(during, 99)) / steady, "max_gap_ms": float(np.max(during)) * 1000,
            "image_ttft_s": image.ttft_s, "gaps": len(during)}


class Trace:
    """(start, seconds, kind, detail) of the engine's timed work, appended on the engine thread."""

    def __init__(self, engine: Engine):
        self.events: list[tuple[float, float, str, str]] = []
        self.engine = engine
        self._wrap(engine._step, "decode", "decode", self._batch_detail)
        self._wrap(engine._images, "_decode_embd", "image",
                   lambda *a: f"{engine._images.embd_batch.struct.n_tokens} rows")
        self._wrap(engine._ctx, "copy_prefix", "copy", lambda src, dst, keep, *a: f"{keep} cells {src}->{dst}")
        self._wrap(engine, "_admit", "admit", lambda *a: "")
        self._wrap(engine._step, "run", "step", lambda *a: "")

    def _batch_detail(self, *args) -> str:
        batch = self.engine._ctx.batch
        seqs: dict[int, int] = {}
        for s in batch.seq[:batch.n_tokens]:
            seqs[int(s)] = seqs.get(int(s), 0) + 1
        return f"{batch.n_tokens} tokens " + " ".join(f"s{s}:{n}" for s, n in sorted(seqs.items()))

    def _wrap(self, owner, name: str, kind: str, detail) -> None:
        inner = getattr(owner, name)

        def timed(*args, **kwargs):
            text, started = detail(*args), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.events.append((started, time.perf_counter() - started, kind, text))

        setattr(owner, name, timed)

    def show(self, t0: float, firsts: list[float]) -> None:
        for started, seconds, kind, text in sorted(self.events):
            if started + seconds < t0:
                continue
            indent = "" if kind == "step" else "    "
            if kind != "admit" or seconds > 0.001:
                print(f"{(started - t0) * 1000:8.1f} ms {indent}{kind:7s} {seconds * 1000:7.1f} ms  {text}")
        print("first tokens (ms from submission):", " ".join(f"{(t - t0) * 1000:.0f}" for t in sorted(firsts)))


def trace(model, mmproj, threads: int, repeat: int, alone: bool, **config) -> None:
    image = png(1, 48)
    with Engine(EngineConfig(model_path=model, mmproj=mmproj, n_slots=8, n_threads=threads, **config)) as engine:
        engine.submit(about(png(0), "warm up")).result(300)
        timeline = Trace(engine)
        for _ in range(repeat):
            batches = ([QUESTIONS[:1]] if alone else []) + [QUESTIONS]
            for questions in batches:
                engine.clear_prompt_cache()
                engine.wait_idle(60)
                for entry in list(engine._images.store._by_serial.values()):  # encode it again, as cold
                    engine._images.store._drop(entry)
                engine.reset_stats()
                timeline.events.clear()
                t0 = time.perf_counter()
                handles = [engine.submit(about(image, q)) for q in questions]
                done = [h.result(600) for h in handles]
                stats = engine.stats()
                print(f"--- {len(questions)} pane(s): last TTFT {max(d.ttft_s for d in done):.3f} s, "
                      f"encoded {stats.images_encoded}, decodes {stats.decodes}")
                timeline.show(t0, [d.ttft_s + t0 for d in done])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--mmproj", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["a", "b"], default=None)
    parser.add_argument("--server", default=None, metavar="URL", help="a llama-server on the same files (…/v1)")
    parser.add_argument("--size", type=int, default=48, help="the image's side in pixels (Qwen2-VL: (size/8)^2 tokens)")
    parser.add_argument("--max-batch-tokens", type=int, default=None, help="raised to hold a non-causal image")
    parser.add_argument("--trace", action="store_true", help="figure 1's timeline instead of the figures")
    parser.add_argument("--alone", action="store_true", help="with --trace: trace one pane alone first")
    args = parser.parse_args()
    model, mmproj = args.model, args.mmproj
    config = {} if args.max_batch_tokens is None else {"max_batch_tokens": args.max_batch_tokens}
    if args.trace:
        trace(model, mmproj, args.threads, args.repeat, args.alone, **config)
        return

    def show(label: str, figures: dict) -> None:
        print(label, {k: round(v, 3) for k, v in figures.items()}, flush=True)

    for _ in range(args.repeat):
        if args.only != "b":
            show("8 panes on one image:", fan_out(model, mmproj, args.threads, args.size, **config))
        if args.server:
            show("llama-server, the same 8:", server_fan_out(args.server, args.size))
        if args.only != "a":
            show("4 streams, an image prefilled:", gaps_while_image(model, mmproj, args.threads, **config))


if __name__ == "__main__":
    main()
