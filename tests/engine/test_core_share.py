"""Two engines generating at once split the cores (core_share.py) and still produce the tokens they produce alone."""

import threading

from app.engine import GenerationRequest
from app.engine.core_share import CORES, CoreShare
from tests.conftest import GREEDY


def test_core_share_counts_busy_engines_once_each():
    share = CoreShare()
    assert share.busy(1) == 1
    assert share.busy(1) == 1  # the same engine again: still one
    assert share.busy(2) == 2
    share.idle(1)
    assert share.n_busy == 1
    assert share.busy(2) == 1
    share.idle(2)
    share.idle(2)  # idle twice is harmless
    assert share.n_busy == 0


def _request(prompt: str) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": prompt}], sampling=GREEDY, max_tokens=40)


def test_two_engines_at_once_share_threads_and_match_alone(make_engine):
    first, second = make_engine(n_slots=2, n_ctx_per_slot=256), make_engine(n_slots=2, n_ctx_per_slot=256)
    prompts = ["Name three rivers.", "Describe a castle in one sentence."]
    alone = [first.submit(_request(p)).result(timeout=120).text for p in prompts]
    assert first.wait_idle(timeout=30)
    assert CORES.n_busy == 0  # an idle engine gives its threads back

    seen_busy = []
    lock = threading.Lock()

    def on_step(_event):
        with lock:
            seen_busy.append(CORES.n_busy)

    first.subscribe(on_step)
    handles = [engine.submit(_request(p)) for engine in (first, second) for p in prompts]
    texts = [h.result(timeout=180).text for h in handles]
    assert texts[:2] == alone and texts[2:] == alone  # fewer threads, same tokens
    assert max(seen_busy) == 2  # both engines were generating at the same time
    assert first.wait_idle(timeout=30) and second.wait_idle(timeout=30)
    assert CORES.n_busy == 0
