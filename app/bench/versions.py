"""`bench --versions`: a session with 1,000 versions (10 panes × 100 runs, replies of ~250 tokens, one in ten
with its top-5 log-probabilities) opened from disk, and autosaved while one more reply streams.

What it measures: the file's size; opening it (read, decode, build the model; median of 5); the autosave's part
on the GUI thread (encoding the whole session, `Autosaver.encode_seconds`): the first save, which encodes every
version, then each save while a reply streams (the kept versions reuse their encoding, version_file.py; median
of 20); and the write on the autosave's worker thread. No model is needed: the replies are made-up text.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

from app.engine import SamplingParams
from app.engine.sampling.logprobs import TokenLogprob
from app.session import PaneResult, PaneSpec, RunState, Session, autosave, versions

WORDS = ("the lighthouse keeper walked along the shore and counted every wave that broke against the rocks "
         "while gulls argued overhead about bread").split()


def made_up_reply(rng: random.Random, tokens: int, logprobs: bool) -> PaneResult:
    text = " ".join(rng.choice(WORDS) for _ in range(tokens))
    entries = [TokenLogprob(rng.randrange(49152), " w", -rng.random(),
                            tuple((rng.randrange(49152), " x", -rng.random() - 1) for _ in range(5)))
               for _ in range(tokens)] if logprobs else None
    return PaneResult(state=RunState.DONE, text=text, token_ids=[rng.randrange(49152) for _ in range(tokens)],
                      finish_reason="length", prompt_tokens=40, generated_tokens=tokens, queue_wait_s=0.01,
                      ttft_s=0.2, decode_tps=30.0, token_logprobs=entries)


def session_with_versions(count: int = 1000, panes: int = 10, tokens: int = 250, seed: int = 0) -> Session:
    rng = random.Random(seed)
    made = []
    for p in range(panes):
        question = [{"role": "user", "content": f"Tell me about lighthouse number {p}."}]
        runs = [versions.PaneVersion(made_up_reply(rng, tokens, i % 10 == 0), question,
                                     {"sampling": SamplingParams(temperature=0.7, seed=i), "max_tokens": tokens},
                                     versions.now()) for i in range(count // panes)]
        made.append(PaneSpec(title=f"P{p}", turns=runs[-1].turns, result=runs[-1].result, versions=runs,
                             current=len(runs) - 1))
    return Session(panes=made)


def versions_bench(count: int = 1000) -> dict:
    session = session_with_versions(count)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "versions.chorus.json"
        session.save(path)
        opens = []
        for _ in range(5):
            start = time.perf_counter()
            loaded = Session.load(path)
            opens.append(time.perf_counter() - start)
        assert sum(len(p.versions) for p in loaded.panes) == count
        saver = autosave.Autosaver(Path(folder) / "autosave.chorus.json")
        try:
            saver.save(loaded, None, True)
            first = saver.encode_seconds
            saver.flush()
            pane = loaded.panes[0]
            streaming = PaneResult(state=RunState.GENERATING)
            versions.begin(pane, pane.versions[-1].messages, streaming)
            pane.result = streaming
            encodes = []
            for i in range(20):  # a reply streams: each autosave sees a few more words
                streaming.stream(text=streaming.text + f" word{i}")
                before = saver.encode_seconds
                saver.save(loaded, None, True)
                encodes.append(saver.encode_seconds - before)
            saver.flush()
            writes = saver.write_seconds / max(1, saver.writes)
        finally:
            saver.close()
        return {"versions": count, "file_mb": path.stat().st_size / 1e6, "open_s": statistics.median(opens),
                "first_encode_s": first, "streaming_encode_s": statistics.median(encodes), "write_s": writes}


def describe(result: dict) -> str:
    return (f"Session with {result['versions']} versions ({result['file_mb']:.1f} MB): opens in "
            f"{result['open_s']:.3f} s (median of 5); autosave on the GUI thread: {result['first_encode_s'] * 1000:.0f}"
            f" ms the first time, {result['streaming_encode_s'] * 1000:.1f} ms per save while a reply streams "
            f"(median of 20); the write, on the autosave's thread: {result['write_s'] * 1000:.0f} ms")
