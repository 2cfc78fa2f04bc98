"""Images in the engine, measured (issue 37; figures in docs/benchmarks.md, "Images"). No assertions: figures.

1. 8 panes, 8 different questions about one image (image first), submitted together: the last pane's time to
   first token ÷ one pane's alone (the cache cleared between), and how many times the image was encoded.
2. 4 panes streaming text while a fifth request's image is prefilled: the p99 of the 4 streams' inter-token
   gaps from the image's submission to its first token, ÷ their median gap before it (steady).

SmolLM2-135M with the tiny random projector of tests/vision_gguf.py (64 image tokens; `--image-tokens 256`
for one of a real Gemma 3 image's size, decoded causally in pieces like the 64-token one), or `--pair qwen2vl` /
`--pair gemma3` (the test pairs of tests/vision_qwen2vl.py and tests/vision_gemma3.py), or `--model/--mmproj`, or
with `--gemma3` Gemma 3 270M and a random "gemma3" projector of 256 tokens an image (tests/vision_gemma3.py), whose
images decode non-causally, whole, in one llama_decode (the batch raised to hold one).
`--only a` / `--only b` runs one of the two; `--server` also times llama-server (`-np 8`) on figure 1's 8 requests
(one request alone on another image, then the 8 sent at once: each request's time to its first streamed token).

    python scripts/measure_vision.py [--threads 2] [--pair tiny|qwen2vl|gemma3 | --gemma3] [--repeat 3]
                                      [--only a|b] [--server] [--image-tokens 256]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams  # noqa: E402
from app.models import default_model_path  # noqa: E402
from tests.vision_gguf import IMAGE_TOKENS, sample_png, tiny_mmproj  # noqa: E402
from tests.vision_gguf import about as ask  # noqa: E402

GREEDY = SamplingParams(temperature=0.0)
about = functools.partial(ask, max_tokens=8)  # a greedy question about one image, 8 new tokens
QUESTIONS = ["What is in this image?", "Describe the colours.", "Is there any text?", "Count the shapes.",
             "What is the mood?", "Where was it taken?", "Who made it?", "Give it a title."]


def pair_files(pair: str, image_tokens: int = IMAGE_TOKENS) -> tuple[str, str]:
    """(text model, projector) of a test pair, built and cached on first use; `image_tokens`: the tiny pair's
    projector gives that many tokens an image (64, the tests'; 256, a real Gemma 3 image's count)."""
    if pair == "qwen2vl":
        from tests.vision_qwen2vl import tiny_qwen2vl
        return tuple(map(str, tiny_qwen2vl()))
    if pair == "gemma3":
        from tests.vision_gemma3 import tiny_gemma3
        return tuple(map(str, tiny_gemma3()))
    return default_model_path(), str(tiny_mmproj(image_tokens=image_tokens))


def fan_out(model, mmproj, threads: int, size: int = 48, **config) -> dict:
    png = sample_png(1, size)
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=8, n_threads=threads,
                                **config)) as engine:
        engine.submit(about(sample_png(0), "warm up")).result(300)
        engine.clear_prompt_cache()
        alone = engine.submit(about(png, QUESTIONS[0])).result(300)
        one = alone.ttft_s
        engine.clear_prompt_cache()
        store = engine._images.store
        store._drop(store.entry(max(store._by_serial)))  # encode it again, as cold
        engine.wait_idle(60)
        engine.reset_stats()
        done = [h.result(600) for h in [engine.submit(about(png, q)) for q in QUESTIONS]]
        stats = engine.stats()
    last = max(d.ttft_s for d in done)
    return {"one_ttft_s": one, "last_of_8_ttft_s": last, "ratio": last / one,
            "encoded": stats.images_encoded, "reused": stats.images_reused, "prompt_tokens": alone.prompt_tokens,
            "shared_tokens": min((d.cached_tokens for d in done if d.cached_tokens), default=0)}


def server_fan_out(model, mmproj, threads: int, size: int = 48) -> dict:
    """llama-server -np 8 on the same requests: one alone (another image), then the 8 sent at once."""
    from tests.backends.test_vision_server import server_ttfts  # the server test's own timing of a stream
    from tests.servers import llama_server

    png = sample_png(1, size)
    server = llama_server(model, "--mmproj", str(mmproj), "-np", "8", "-c", "8192", "-t", str(threads)).start()
    try:
        server_ttfts(server, [about(sample_png(0), "warm up").messages])
        one = server_ttfts(server, [about(sample_png(3, size), QUESTIONS[0]).messages])[0]
        last = max(server_ttfts(server, [about(png, q).messages for q in QUESTIONS]))
    finally:
        server.kill()
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
        image = engine.submit(about(sample_png(2), "What is this?")).result(300)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default=None)
    parser.add_argument("--mmproj", default=None)
    parser.add_argument("--gemma3", action="store_true", help="Gemma 3 270M, a 256-token non-causal projector")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pair", choices=["tiny", "qwen2vl", "gemma3"], default="tiny")
    parser.add_argument("--only", choices=["a", "b"], default=None)
    parser.add_argument("--server", action="store_true")
    parser.add_argument("--image-tokens", type=int, default=IMAGE_TOKENS,
                        help="tokens an image with the tiny projector (a square: 64, 256, ...)")
    parser.add_argument("--size", type=int, default=48, help="the image's side in pixels (Qwen2-VL: (size/8)^2 tokens)")
    args = parser.parse_args()
    model, mmproj = pair_files(args.pair, args.image_tokens)
    model, mmproj = args.model or model, args.mmproj or mmproj
    config = {}
    if args.gemma3:
        from tests.vision_gemma3 import tiny_gemma3

        model, mmproj = tiny_gemma3(image_tokens=256)
        config = {"max_batch_tokens": 256}  # a non-causal image goes whole into one batch

    def show(label: str, figures: dict) -> None:
        print(label, {k: round(v, 3) for k, v in figures.items()}, flush=True)

    for _ in range(args.repeat):
        if args.only != "b":
            show("8 panes on one image:", fan_out(model, mmproj, args.threads, args.size, **config))
        if args.server:
            show("llama-server, the same 8:", server_fan_out(model, mmproj, args.threads, args.size))
        if args.only != "a":
            show("4 streams, an image prefilled:", gaps_while_image(model, mmproj, args.threads, **config))


if __name__ == "__main__":
    main()
