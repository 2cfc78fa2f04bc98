"""Where the 8 panes' time goes (issue 37): figure 1 of measure_vision.py with the engine's work timed.

Wraps the engine's seams on its own thread (no change to the engine): every text llama_decode (`Step.decode`:
its tokens and sequences), every image piece (`VisionStep._decode_embd`: its rows), every prefix copy
(`LlamaContext.copy_prefix`), each admission (`Engine._admit`) and each iteration (`Step.run`), then prints
the 8 panes' timeline from their submission: what each iteration did, and when each pane got its first token.

    python scripts/trace_vision.py [--image-tokens 256] [--threads 2] [--repeat 1] [--alone]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.engine import Engine, EngineConfig  # noqa: E402
from scripts.measure_vision import QUESTIONS, about, pair_files  # noqa: E402
from tests.vision_gguf import sample_png  # noqa: E402


class Trace:
    """(start, seconds, kind, detail) of the engine's timed work, appended on the engine thread."""

    def __init__(self, engine: Engine):
        self.events: list[tuple[float, float, str, str]] = []
        self.engine = engine
        self._wrap(engine._step, "decode", "decode", self._batch_detail)
        images = engine._images
        self._wrap(images, "_decode_embd", "image", lambda *a: f"{images.embd_batch.struct.n_tokens} rows")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--image-tokens", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--alone", action="store_true", help="trace one pane alone too")
    args = parser.parse_args()
    model, mmproj = pair_files("tiny", args.image_tokens)
    png = sample_png(1, 48)
    with Engine(EngineConfig(model_path=model, mmproj=mmproj, n_slots=8, n_threads=args.threads)) as engine:
        engine.submit(about(sample_png(0), "warm up")).result(300)
        trace = Trace(engine)
        for _ in range(args.repeat):
            batches = ([QUESTIONS[:1]] if args.alone else []) + [QUESTIONS]
            for questions in batches:
                engine.clear_prompt_cache()
                engine.wait_idle(60)
                for entry in list(engine._images.store._by_serial.values()):  # encode it again, as cold
                    engine._images.store._drop(entry)
                engine.reset_stats()
                trace.events.clear()
                t0 = time.perf_counter()
                handles = [engine.submit(about(png, q)) for q in questions]
                done = [h.result(600) for h in handles]
                stats = engine.stats()
                print(f"--- {len(questions)} pane(s): last TTFT {max(d.ttft_s for d in done):.3f} s, "
                      f"encoded {stats.images_encoded}, decodes {stats.decodes}")
                trace.show(t0, [d.ttft_s + t0 for d in done])


if __name__ == "__main__":
    main()
