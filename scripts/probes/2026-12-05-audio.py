"""Audio in the engine, measured. No assertions: figures (docs/benchmarks.md, "Audio").

What `python -m app bench --audio` measures (app/bench/audio.py), run by hand: 8 panes, 8 different questions
about one 10 s clip (the clip first), submitted together: the last pane's time to first token ÷ one pane's alone
(on another clip of the same length, cold too), how many times the clip was encoded and how many of its rows were
prefilled; beside it llama-server `--mmproj -np 8` started in the same run on the same two files (the one
`make llama-server` built, or `--llama-server PATH`). `--trace` prints the engine's timeline instead (every text
llama_decode, clip piece ("image"), prefix copy, tokenisation, encode and admission, and each pane's first token).

The pair is the tests' (random weights): SmolLM2-135M, the embedded model
(`python -c "from app.models import default_model_path as p; print(p())"`), and the tiny Ultravox projector
(`python -m tests.fixtures.audio_gguf DIR`, which prints its path; 150 audio tokens a 30 s window).

    python scripts/probes/2026-12-05-audio.py [--model MODEL] [--mmproj MMPROJ] [--threads 2] [--repeat 3]
        [--llama-server PATH] [--trace]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.bench import audio  # noqa: E402
from app.engine import Engine, EngineConfig  # noqa: E402
from app.models import default_model_path  # noqa: E402


def images_probe():
    """The images probe (its Trace wraps the engine's timed work), loaded from its file."""
    path = Path(__file__).with_name("2026-11-26-images.py")
    spec = importlib.util.spec_from_file_location("images_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trace(model: Path, mmproj: Path, threads: int) -> None:
    """One pane alone, then 8 panes on one clip: the engine's timed work from the submissions (the images probe's
    Trace: text decodes, pieces of media, prefix copies, admissions, steps) and the clip's tokenising and encode."""
    clips = audio._clips(audio.SECONDS)
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=audio.PANES, n_threads=threads)) as engine:
        engine.submit(audio.about(clips["warm"], "Warm up.")).result(300)
        timeline = images_probe().Trace(engine)
        timeline._wrap(engine._images.store, "tokenize", "tokenize", lambda *a: "")
        timeline._wrap(engine._images.store, "embeddings", "encode", lambda *a: "")
        for clip, questions in ((clips["alone"], audio.QUESTIONS[:1]), (clips["shared"], audio.QUESTIONS)):
            engine.clear_prompt_cache()
            engine.wait_idle(60)
            engine.reset_stats()
            timeline.events.clear()
            t0 = time.perf_counter()
            done = [h.result(600) for h in [engine.submit(audio.about(clip, q)) for q in questions]]
            stats = engine.stats()
            print(f"--- {len(questions)} pane(s): last TTFT {max(d.ttft_s for d in done):.3f} s, cached "
                  f"{[d.cached_tokens for d in done]}, clips encoded {stats.clips_encoded}, clip rows prefilled "
                  f"{stats.clip_rows_prefilled}")
            timeline.show(t0, [d.ttft_s + t0 for d in done])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--mmproj", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--llama-server", type=Path, default=None, metavar="PATH")
    parser.add_argument("--trace", action="store_true", help="the engine's timeline instead of the figures")
    args = parser.parse_args()
    model, mmproj = args.model or default_model_path(), args.mmproj or audio.projector_path()
    if args.trace:
        trace(model, mmproj, args.threads)
        return
    if args.llama_server:
        audio.llama_server_path = lambda: args.llama_server
    result = audio.audio_bench(model, args.threads, args.repeat, mmproj, on_run=lambda label: print(label, flush=True))
    print(audio.format_audio(result))


if __name__ == "__main__":
    main()
