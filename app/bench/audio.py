"""`bench --audio`: 8 panes asking 8 questions about one 10 s clip, submitted together: the last pane's time to
first token ÷ one pane's alone (goal ≤ 1.3), for Chorus's engine and for llama-server `--mmproj -np 8` in the
same run.

The pair is the tests' (random weights, so the replies mean nothing): SmolLM2-135M, the embedded model, and the
tiny Ultravox projector tests/fixtures/audio_gguf.py writes into the cache (`python -m tests.fixtures.audio_gguf`
in a source checkout with the test extra; 150 audio tokens a 30 s window). The shared clip is a 10 s chirp, the
lone pane's clip two tones of the same length (the same tokens, cold too), 16 kHz wav. Each repetition runs a new
8-slot engine and a new llama-server on the same files back to back, the order alternating (pairs.py); each warms
up on a third clip, then takes the lone request, then the 8 at once, its prompt cache cleared before each (the
engine's) or off (llama-server's `cache_prompt: false`). The engine's TTFT is its own (submission to first token);
llama-server's is the client's, to the first streamed token.
"""

from __future__ import annotations

import base64
import io
import tempfile
import time
import wave
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from app.bench import model_files
from app.bench.eval_suite import llama_server_path, start_llama_server
from app.bench.pairs import reference_first
from app.bench.workloads import GREEDY, median
from app.engine import Engine, EngineConfig, GenerationRequest

RATE = 16000  # Whisper's sample rate (libmtmd's for Ultravox)
SECONDS = 10.0
PANES = 8
QUESTIONS = ["What is this sound?", "Transcribe it.", "Is it speech?", "How loud is it?",
             "What instrument?", "Describe it.", "How long is it?", "Give it a title."]
PROJECTOR = "tiny-ultravox-mmproj-v1.gguf"  # tests/fixtures/audio_gguf.py's file (its VERSION 1)


def sample_clip(kind: int, seconds: float = 1.0, rate: int = RATE) -> np.ndarray:
    """A mono float32 clip in [-1, 1]: 0 a 440 Hz tone, 1 noise, 2 a chirp (200 Hz to 3 kHz), else two tones."""
    t = np.arange(int(seconds * rate)) / rate
    if kind == 0:
        x = 0.5 * np.sin(2 * np.pi * 440 * t)
    elif kind == 1:
        x = 0.3 * np.random.default_rng(kind).standard_normal(len(t))
    elif kind == 2:
        x = 0.5 * np.sin(2 * np.pi * (200 * t + (3000 - 200) / (2 * seconds) * t * t))
    else:
        x = 0.3 * np.sin(2 * np.pi * 330 * t) + 0.3 * np.sin(2 * np.pi * 1320 * t)
    return np.clip(x, -1, 1).astype(np.float32)


def wav_bytes(samples: np.ndarray, rate: int = RATE) -> bytes:
    """The clip as a 16-bit PCM mono wav file's bytes (stdlib wave)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return out.getvalue()


def projector_path() -> Path:
    return model_files.CACHE / "vision" / PROJECTOR


def about(clip: bytes, question: str) -> GenerationRequest:
    """A greedy question about one clip (the clip first), 8 new tokens."""
    part = {"type": "input_audio", "input_audio": {"data": base64.b64encode(clip).decode(), "format": "wav"}}
    return GenerationRequest(messages=[{"role": "user", "content": [part, {"type": "text", "text": question}]}],
                             max_tokens=8, sampling=GREEDY)


def _clips(seconds: float) -> dict[str, bytes]:
    return {"warm": wav_bytes(sample_clip(0, 1.0)), "alone": wav_bytes(sample_clip(3, seconds)),
            "shared": wav_bytes(sample_clip(2, seconds))}


def engine_fan_out(model: Path, mmproj: Path, threads: int, seconds: float = SECONDS) -> dict:
    clips = _clips(seconds)
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=PANES, n_threads=threads)) as engine:
        engine.submit(about(clips["warm"], "Warm up.")).result(300)
        engine.clear_prompt_cache()
        alone = engine.submit(about(clips["alone"], QUESTIONS[0])).result(300)
        engine.clear_prompt_cache()
        engine.reset_stats()
        done = [h.result(600) for h in [engine.submit(about(clips["shared"], q)) for q in QUESTIONS[:PANES]]]
        stats = engine.stats()
    if alone.error or any(d.error for d in done):
        raise RuntimeError(f"the engine failed a request: {alone.error or next(d.error for d in done if d.error)}")
    last = max(d.ttft_s for d in done)
    return {"one_ttft_s": alone.ttft_s, "last_ttft_s": last, "ratio": last / alone.ttft_s,
            "prompt_tokens": alone.prompt_tokens, "clips_encoded": stats.clips_encoded,
            "clip_rows_prefilled": stats.clip_rows_prefilled}


def server_fan_out(binary: Path, model: Path, mmproj: Path, threads: int, folder: Path,
                   seconds: float = SECONDS) -> dict:
    clips = _clips(seconds)
    proc, url = start_llama_server(binary, model, threads, PANES, 1024, folder / "llama-server-audio.log",
                                   extra=["--mmproj", str(mmproj)])
    try:
        stream_ttfts(url, [about(clips["warm"], "Warm up.").messages])
        one = stream_ttfts(url, [about(clips["alone"], QUESTIONS[0]).messages])[0]
        last = max(stream_ttfts(url, [about(clips["shared"], q).messages for q in QUESTIONS[:PANES]]))
    finally:
        proc.terminate()
        proc.wait(30)
    return {"one_ttft_s": one, "last_ttft_s": last, "ratio": last / one}


def stream_ttfts(url: str, requests: list[list[dict]], max_tokens: int = 8) -> list[float]:
    """Each chat request's time to its first streamed token on an OpenAI-compatible server at `url` (…/v1), all
    sent at once (a thread each), greedy, llama-server's prompt cache off for them."""
    def one(messages: list[dict]) -> float:
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
                "cache_prompt": False}
        start = time.perf_counter()
        with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=600) as reply:
            for line in reply.iter_lines():
                if line.startswith("data: ") and '"content":"' in line.replace(": ", ":"):
                    return time.perf_counter() - start
        raise RuntimeError(f"{url} streamed no token (HTTP {reply.status_code})")

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(one, requests))


def audio_bench(model: Path, threads: int, repetitions: int = 3, mmproj: Path | None = None,
                on_run: Callable[[str], None] | None = None, in_thread: Callable | None = None) -> dict:
    """{"engine": {"ratio": median, "runs"}, "llama_server": the same or {"note"}, "seconds", "panes"}.
    `in_thread(fn, *args)` runs an engine measurement on a fresh thread (app.bench.measure.in_fresh_thread)."""
    mmproj = mmproj or projector_path()
    if not mmproj.is_file():
        raise RuntimeError(f"the tiny audio projector is not built ({mmproj}): run "
                           "`python -m tests.fixtures.audio_gguf` in a source checkout (the test extra installed)")
    binary = llama_server_path()
    run = in_thread or (lambda fn, *a, **k: fn(*a, **k))
    runs: dict[str, list[dict]] = {"engine": [], "llama_server": []}
    with tempfile.TemporaryDirectory(prefix="chorus-bench-audio-") as folder:
        for rep in range(1, repetitions + 1):
            order = ["engine", "llama_server"] if binary.is_file() else ["engine"]
            for kind in order[::-1] if reference_first(rep) else order:
                if on_run:
                    on_run(f"rep {rep}: {'Chorus' if kind == 'engine' else 'llama-server'}, {PANES} panes on one clip")
                runs[kind].append(run(engine_fan_out, model, mmproj, threads) if kind == "engine" else
                                  server_fan_out(binary, model, mmproj, threads, Path(folder)))
    summary = {kind: {"ratio": median([r["ratio"] for r in found]), "runs": found}
               for kind, found in runs.items() if found}
    if "llama_server" not in summary:
        summary["llama_server"] = {"note": f"llama-server is not built ({binary}): run `make llama-server` for "
                                           "the comparison"}
    return {"seconds": SECONDS, "panes": PANES, **summary}


def _runs(runs: list[dict]) -> str:
    return ", ".join(f"{r['ratio']:.2f} ({r['one_ttft_s'] * 1000:.0f} -> {r['last_ttft_s'] * 1000:.0f} ms)"
                     for r in runs)


def format_audio(result: dict) -> str:
    ours, theirs = result["engine"], result["llama_server"]
    lines = [f"Audio: {result['panes']} panes asking about one {result['seconds']:g} s clip "
             f"({ours['runs'][0]['prompt_tokens']}-token prompts), the last pane's TTFT ÷ one pane's (goal ≤ 1.3):",
             f"  Chorus        {ours['ratio']:.2f}  runs {_runs(ours['runs'])}",
             "                the clip encoded " + ", ".join(str(r["clips_encoded"]) for r in ours["runs"])
             + " time(s), its rows prefilled " + ", ".join(str(r["clip_rows_prefilled"]) for r in ours["runs"])
             + " (the other panes copied them)"]
    if "note" in theirs:
        lines.append("  llama-server: " + theirs["note"])
    else:
        lines.append(f"  llama-server  {theirs['ratio']:.2f}  runs {_runs(theirs['runs'])}")
    return "\n".join(lines)
