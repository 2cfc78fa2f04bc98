"""Audio in the engine, measured. No assertions: figures (docs/benchmarks.md, "Audio").

8 panes, 8 different questions about one 10 s clip (the clip first), submitted together: the last pane's time to
first token ÷ one pane's alone (the cache cleared between, the clip's encoding dropped so it is encoded again),
and how many times the clip was encoded. With `--llama-server PATH`, the same figure from a llama-server started
in the same run on the same two files (`-np 8 -c 8192`, the client timing each streamed first token), or
`--server URL` for one already running.

The pair is the tests' (random weights): SmolLM2-135M, the embedded model
(`python -c "from app.models import default_model_path as p; print(p())"`), and the tiny Ultravox projector
(`python -m tests.fixtures.audio_gguf DIR`, which prints its path; 150 audio tokens a 30 s window). The clips are
numpy tones and chirps, 16 kHz wav.

    python scripts/probes/2026-12-05-audio.py --model MODEL --mmproj MMPROJ [--threads 2] [--repeat 3]
        [--seconds 10] [--llama-server ~/.cache/chorus/llama-server-0.3.36/llama-server | --server URL]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.backends import OpenAIBackend  # noqa: E402
from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams  # noqa: E402
from tests.fixtures.audio_gguf import audio_part, encode, sample_clip  # noqa: E402

GREEDY = SamplingParams(temperature=0.0)
QUESTIONS = ["What is this sound?", "Transcribe it.", "Is it speech?", "How loud is it?",
             "What instrument?", "Describe it.", "How long is it?", "Give it a title."]


def about(clip: bytes, question: str) -> GenerationRequest:
    """A greedy question about one clip (the clip first), 8 new tokens."""
    parts = [audio_part(clip), {"type": "text", "text": question}]
    return GenerationRequest(messages=[{"role": "user", "content": parts}], max_tokens=8, sampling=GREEDY)


def fan_out(model, mmproj, threads: int, seconds: float) -> dict:
    clip = encode(sample_clip(2, seconds))
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=8, n_threads=threads)) as engine:
        engine.submit(about(encode(sample_clip(0, 1.0)), "warm up")).result(300)
        engine.clear_prompt_cache()
        alone = engine.submit(about(clip, QUESTIONS[0])).result(300)
        engine.clear_prompt_cache()
        store = engine._images.store
        for entry in [e for e in store._by_serial.values() if e.audio]:
            store._drop(entry)  # encode it again, as cold
        engine.wait_idle(60)
        engine.reset_stats()
        done = [h.result(600) for h in [engine.submit(about(clip, q)) for q in QUESTIONS]]
        stats = engine.stats()
    last = max(d.ttft_s for d in done)
    return {"one_ttft_s": alone.ttft_s, "last_of_8_ttft_s": last, "ratio": last / alone.ttft_s,
            "encoded": stats.clips_encoded, "reused": stats.clips_reused, "prompt_tokens": alone.prompt_tokens}


def server_fan_out(url: str, seconds: float) -> dict:
    """The same requests on a llama-server: one alone (another clip), then the 8 sent at once."""
    backend = OpenAIBackend(url, max_concurrency=8)
    try:
        def ttfts(requests: list[GenerationRequest]) -> list[float]:
            return [h.result(600).ttft_s for h in [backend.submit(r) for r in requests]]

        ttfts([about(encode(sample_clip(0, 1.0)), "warm up")])
        one = ttfts([about(encode(sample_clip(3, seconds)), QUESTIONS[0])])[0]
        last = max(ttfts([about(encode(sample_clip(2, seconds)), q) for q in QUESTIONS]))
    finally:
        backend.close()
    return {"one_ttft_s": one, "last_of_8_ttft_s": last, "ratio": last / one}


def start_server(binary: str, model, mmproj, threads: int, port: int = 8093) -> subprocess.Popen:
    proc = subprocess.Popen([binary, "-m", str(model), "--mmproj", str(mmproj), "-np", "8", "-c", "8192",
                             "-t", str(threads), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("llama-server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--mmproj", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="the shared clip's length")
    parser.add_argument("--server", default=None, metavar="URL", help="a llama-server on the same files (…/v1)")
    parser.add_argument("--llama-server", default=None, metavar="PATH", help="start one on the same files")
    args = parser.parse_args()

    def show(label: str, figures: dict) -> None:
        print(label, {k: round(v, 3) for k, v in figures.items()}, flush=True)

    proc = start_server(args.llama_server, args.model, args.mmproj, args.threads) if args.llama_server else None
    url = "http://127.0.0.1:8093/v1" if proc else args.server
    try:
        for _ in range(args.repeat):
            show(f"8 panes on one {args.seconds:g} s clip:", fan_out(args.model, args.mmproj, args.threads,
                                                                    args.seconds))
            if url:
                show("llama-server -np 8, the same 8:", server_fan_out(url, args.seconds))
    finally:
        if proc:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
