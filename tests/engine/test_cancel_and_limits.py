"""Cancellation, context limits, and llama_decode failures."""

import threading

from app.engine import RequestState
from tests.conftest import ask, assert_kv_accounted


def test_cancel_all_keeps_partial_text_and_never_admits_queued(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    both_generating = threading.Event()
    speaking: set[int] = set()

    cancelled = threading.Event()

    def on_step(event) -> None:
        speaking.update(event.deltas)
        if len(speaking) >= 2 and not both_generating.is_set():
            both_generating.set()
            cancelled.wait(60)  # the engine waits for the cancel: two still run and four still queue, however fast

    engine.subscribe(on_step)
    handles = [engine.submit(ask(f"Tell me a long story about dragon number {i}.", max_tokens=200,
                                 ignore_eos=True)) for i in range(6)]
    assert both_generating.wait(60)
    engine.cancel_all()
    cancelled.set()
    results = [h.result(timeout=30) for h in handles]
    assert all(r.finish_reason == "cancelled" for r in results)
    running, queued = results[:2], results[2:]
    assert all(r.generated_tokens > 0 and r.text for r in running)
    assert all(r.generated_tokens == 0 and r.prompt_tokens == 0 and r.queue_wait_s is None for r in queued)
    assert all(h.state == RequestState.CANCELLED for h in handles)
    for h in handles:  # idempotent, also after the end
        h.cancel()
    assert engine.submit(ask("Still alive?", max_tokens=4)).result(timeout=30).generated_tokens > 0
    assert_kv_accounted(engine)


def test_oversize_prompt_errors_with_sizes_while_others_complete(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    normal = engine.submit(ask("Name a color.", max_tokens=16))
    huge = engine.submit(ask("word " * 400, max_tokens=16))
    bad, good = huge.result(timeout=60), normal.result(timeout=60)
    assert bad.finish_reason == "error" and bad.generated_tokens == 0
    assert bad.prompt_tokens > 256  # counted, so the message can say it
    assert f"the prompt is {bad.prompt_tokens} tokens but a slot holds 256" in bad.error
    assert good.finish_reason in ("stop", "length") and good.generated_tokens > 0


def test_generation_reaching_the_slot_context_ends_with_length(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=128)
    result = engine.submit(ask("Write a very long essay.", max_tokens=1000, ignore_eos=True)).result(60)
    assert result.finish_reason == "length"
    assert result.prompt_tokens + result.generated_tokens == 128


def test_decode_failure_errors_the_step_and_the_engine_goes_on(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    real_decode, calls = engine._step.decode, []

    def failing_once():
        calls.append(1)
        return -3 if len(calls) == 3 else real_decode()

    engine._step.decode = failing_once
    doomed = [engine.submit(ask("Tell me about owls.", max_tokens=20)) for _ in range(2)]
    results = [h.result(timeout=60) for h in doomed]
    assert all(r.finish_reason == "error" and "code -3" in r.error for r in results)
    after = engine.submit(ask("Tell me about owls.", max_tokens=8)).result(timeout=60)
    assert after.finish_reason in ("stop", "length") and after.generated_tokens > 0
    assert_kv_accounted(engine)


def test_full_kv_shrinks_the_prefill_part_and_retries(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256, reproducible=False)  # aligned chunks never shrink
    real_decode, sizes = engine._step.decode, []

    def full_on_big_steps():
        n = engine._ctx.batch.n_tokens
        sizes.append(n)
        return 1 if n > 10 else real_decode()

    engine._step.decode = full_on_big_steps
    result = engine.submit(ask("Hello there, how are you today?", max_tokens=4)).result(timeout=60)
    assert result.finish_reason in ("stop", "length") and result.generated_tokens > 0
    assert max(sizes) > 10 and all(n <= 10 for n in sizes[-3:])
