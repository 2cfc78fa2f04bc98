"""What other threads may do with an engine while it runs: subscribe, read state and positions, close."""

import sys
import threading

from app.engine import RequestState
from tests.conftest import ask, assert_kv_accounted


def test_concurrent_subscribe_and_unsubscribe_lose_no_update(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    permanent = []
    engine.subscribe(lambda ev: permanent.extend(c.request_id for c in ev.finished))
    late_calls = []
    barrier = threading.Barrier(4)
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: a read-modify-write race shows up

    def churn(worker: int) -> None:
        barrier.wait()
        for i in range(3000):
            unsubscribe = engine.subscribe(lambda ev, tag=(worker, i): late_calls.append(tag))
            unsubscribe()
            unsubscribe()  # idempotent

    try:
        threads = [threading.Thread(target=churn, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    late_calls.clear()
    handle = engine.submit(ask("Name a color.", max_tokens=4))
    handle.result(timeout=60)
    assert engine.wait_idle(30)
    assert permanent == [handle.id]  # the permanent subscriber survived every concurrent change
    assert late_calls == []  # and no unsubscribed one is still called


def test_kv_positions_is_safe_while_decoding_and_after_close(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    handle = engine.submit(ask("Write a story.", max_tokens=40, ignore_eos=True))
    seen = set()
    while not handle.done():
        seen.add(tuple(engine.kv_positions()))
    assert any(p[0] > 0 for p in seen)  # it did see the running sequence's KV grow
    assert_kv_accounted(engine)
    assert engine.close() is True
    assert engine.kv_positions() == [0, 0]  # reads the last snapshot, never freed memory


def test_a_finished_handle_state_never_changes_again(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    handle = engine.submit(ask("Say hi.", max_tokens=4))
    handle.result(timeout=60)
    assert handle.state == RequestState.DONE
    handle.state = RequestState.GENERATING  # what a racing engine-thread write would do
    assert handle.state == RequestState.DONE


def test_close_with_a_timeout_returns_even_if_a_step_is_stuck(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    real_decode = engine._step.decode
    in_step, release = threading.Event(), threading.Event()

    def stuck_decode():
        in_step.set()
        release.wait()
        return real_decode()

    engine._step.decode = stuck_decode
    handle = engine.submit(ask("Hello.", max_tokens=4))
    assert in_step.wait(30)
    assert engine.close(timeout=0.2) is False  # returned while the step is still stuck
    release.set()
    assert handle.result(timeout=30).finish_reason == "cancelled"
    engine._thread.join(30)
    assert engine.closed
