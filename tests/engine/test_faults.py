"""Faults injected at each point of a step: every request ends exactly once and the engine keeps serving."""

import threading
from collections import Counter

import pytest

import app.engine.admission as admission_module
import app.engine.request as request_module
from app.backends import LocalBackend
from app.engine import EngineConfig, EngineStopped, SamplingParams
from app.engine.sampling.chain import SamplerChain
from app.engine.text import TextStream
from tests.conftest import TEST_THREADS, ask, assert_kv_accounted

MARK_SEED = 424242  # requests carrying this seed are the ones a fault hits


def marked(text="Tell me about owls.", max_tokens=12):
    return ask(text, max_tokens=max_tokens, sampling=SamplingParams(temperature=0.5, seed=MARK_SEED))


def finished_counter(engine) -> Counter:
    counts = Counter()
    engine.subscribe(lambda ev: counts.update(c.request_id for c in ev.finished))
    return counts


def assert_healthy(engine, counts, handles):
    """Each handle ended once, the engine serves a new request, and no slot or KV is left behind."""
    assert engine.wait_idle(30)  # the step that finished the last one has published its event
    assert all(counts[h.id] == 1 for h in handles), {h.id: counts[h.id] for h in handles}
    after = engine.submit(ask("Name a color.", max_tokens=6)).result(timeout=60)
    assert after.finish_reason in ("stop", "length") and after.generated_tokens > 0
    assert engine.wait_idle(30)
    snap = engine.stats()
    assert snap.active == 0 and snap.queued == 0
    assert_kv_accounted(engine)


def test_unexpected_step_fault_ends_running_requests_once_and_still_serves_the_queue(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    counts = finished_counter(engine)
    real_fill, calls = engine._step.fill_batch, []

    def faulty_fill(plan, *pads):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("injected fault in a step")
        return real_fill(plan, *pads)

    engine._step.fill_batch = faulty_fill
    handles = [engine.submit(ask(f"Count to {n}.", max_tokens=8)) for n in (3, 4, 5)]
    results = [h.result(timeout=60) for h in handles]
    assert results[0].finish_reason == "error" and "injected fault" in results[0].error
    # The two that were still queued were never touched by the fault: they run normally, once each.
    assert all(r.finish_reason in ("stop", "length") and r.generated_tokens > 0 for r in results[1:])
    assert_healthy(engine, counts, handles)


def test_fault_between_slot_assignment_and_running_frees_the_slot(make_engine, monkeypatch):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    counts = finished_counter(engine)

    class FailingChain(SamplerChain):
        def __init__(self, params, *args, **kwargs):
            if params.seed == MARK_SEED:
                raise RuntimeError("injected fault building a sampler")
            super().__init__(params, *args, **kwargs)

    monkeypatch.setattr(admission_module, "SamplerChain", FailingChain)
    handles = [engine.submit(marked()), engine.submit(ask("Name a fruit.", max_tokens=6))]
    bad, good = (h.result(timeout=60) for h in handles)
    assert bad.finish_reason == "error" and "building a sampler" in bad.error
    assert good.finish_reason in ("stop", "length")
    # Both slots are usable again: two requests at once complete.
    pair = [engine.submit(ask(f"Name a number above {n}.", max_tokens=6)) for n in (10, 20)]
    assert all(h.result(timeout=60).generated_tokens > 0 for h in pair)
    assert_healthy(engine, counts, handles + pair)


def test_rendering_fault_ends_only_that_request(make_engine, monkeypatch):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    counts = finished_counter(engine)
    real_text = engine._renderer.text

    def text(request):
        if request.sampling.seed == MARK_SEED:
            raise KeyError("injected fault while rendering")
        return real_text(request)

    monkeypatch.setattr(engine._renderer, "text", text)
    handles = [engine.submit(marked()), engine.submit(ask("Name a fruit.", max_tokens=6))]
    bad, good = (h.result(timeout=60) for h in handles)
    assert bad.finish_reason == "error" and "while rendering" in bad.error
    assert good.finish_reason in ("stop", "length") and good.generated_tokens > 0
    assert_healthy(engine, counts, handles)


def test_sampling_fault_ends_only_that_request(make_engine, monkeypatch):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    counts = finished_counter(engine)

    class FailingSample(SamplerChain):
        def __init__(self, params, *args, **kwargs):
            super().__init__(params, *args, **kwargs)
            self.fail = params.seed == MARK_SEED

        def sample(self, ctx_ptr, batch_index):
            if self.fail:
                raise RuntimeError("injected fault while sampling")
            return super().sample(ctx_ptr, batch_index)

    monkeypatch.setattr(admission_module, "SamplerChain", FailingSample)
    handles = [engine.submit(marked()), engine.submit(ask("Name a fruit.", max_tokens=12, ignore_eos=True))]
    bad, good = (h.result(timeout=60) for h in handles)
    assert bad.finish_reason == "error" and "while sampling" in bad.error
    assert good.finish_reason == "length" and good.generated_tokens == 12
    assert_healthy(engine, counts, handles)


def test_text_fault_ends_only_that_request(make_engine, monkeypatch):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    counts = finished_counter(engine)

    class FailingText(TextStream):
        def feed(self, data: bytes) -> str:
            if "BOOM" in self._stops:
                raise UnicodeError("injected fault in the text stream")
            return super().feed(data)

    monkeypatch.setattr(request_module, "TextStream", FailingText)
    handles = [engine.submit(ask("Tell me about owls.", max_tokens=8, stop=["BOOM"])),
               engine.submit(ask("Name a fruit.", max_tokens=8, ignore_eos=True))]
    bad, good = (h.result(timeout=60) for h in handles)
    assert bad.finish_reason == "error" and "text stream" in bad.error
    assert good.finish_reason == "length" and good.generated_tokens == 8
    assert_healthy(engine, counts, handles)


def test_a_failing_subscriber_does_not_stop_the_engine_or_other_subscribers(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)

    def broken(_event):
        raise RuntimeError("injected fault in a subscriber")

    engine.subscribe(broken)
    counts = finished_counter(engine)
    handles = [engine.submit(ask(f"Name an animal that starts with {c}.", max_tokens=6)) for c in "ABC"]
    assert all(h.result(timeout=60).finish_reason in ("stop", "length") for h in handles)
    assert_healthy(engine, counts, handles)


def test_decode_full_on_a_single_prompt_token_errors_instead_of_spinning(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    counts = finished_counter(engine)
    real_decode = engine._step.decode
    engine._step.decode = lambda: 1 if engine._ctx.batch.n_tokens else real_decode()  # "KV full" for any prefill
    handle = engine.submit(ask("Hello there.", max_tokens=4))
    result = handle.result(timeout=60)
    assert result.finish_reason == "error" and "KV cache" in result.error
    engine._step.decode = real_decode
    assert_healthy(engine, counts, [handle])


@pytest.mark.parametrize("code", [-1, -3, 2])
def test_decode_failure_codes_end_the_step_and_the_engine_goes_on(make_engine, code):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    counts = finished_counter(engine)
    real_decode, calls = engine._step.decode, []

    def failing_once():
        calls.append(1)
        return code if len(calls) == 3 else real_decode()

    engine._step.decode = failing_once
    handles = [engine.submit(ask("Tell me about owls.", max_tokens=20)) for _ in range(2)]
    results = [h.result(timeout=60) for h in handles]
    assert all(r.finish_reason == "error" and f"code {code}" in r.error for r in results)
    assert_healthy(engine, counts, handles)


def test_active_count_is_live_after_cancels_between_steps(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    handles = [engine.submit(ask("Write a long story.", max_tokens=200, ignore_eos=True)) for _ in range(3)]
    assert engine.stats().active + engine.stats().queued == 3
    engine.cancel_all()
    for h in handles:
        h.result(timeout=60)
    snap = engine.stats()  # no step ran after the cancels: the figure must not be the last step's
    assert snap.active == 0 and snap.queued == 0


def inject_snapshot_fault(engine) -> threading.Event:
    """Once armed, the engine thread's next KV snapshot (outside any step's try) raises, once."""
    real_snapshot, armed = engine._snapshot_kv, threading.Event()

    def snapshot_kv():
        if armed.is_set():
            armed.clear()
            raise RuntimeError("injected fault in the KV snapshot")
        real_snapshot()

    engine._snapshot_kv = snapshot_kv
    return armed


def test_a_dead_engine_thread_ends_every_request_and_refuses_new_ones(make_engine):
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    counts = finished_counter(engine)
    armed = inject_snapshot_fault(engine)
    running = engine.submit(ask("Write a long story.", max_tokens=200, ignore_eos=True))
    next(running.stream(timeout=60))  # generating: it holds the one slot
    queued = [engine.submit(ask(f"Name a number above {n}.", max_tokens=6)) for n in (10, 20)]
    armed.set()
    handles = [running, *queued]
    results = [h.result(timeout=60) for h in handles]
    assert all(r.finish_reason == "error" and "injected fault in the KV snapshot" in r.error for r in results)
    assert engine.wait_idle(10)  # the thread published those ends before it stopped
    assert all(counts[h.id] == 1 for h in handles)
    assert "injected fault in the KV snapshot" in engine.failure and not engine.alive
    with pytest.raises(EngineStopped, match="stopped.*injected fault in the KV snapshot"):
        engine.submit(ask("Anyone there?"))
    # The model is freed: the format check refuses instead of reading the vocabulary.
    assert "engine stopped" in engine.check_grammar('root ::= "a"')
    assert engine.close(timeout=10)


def test_a_local_backend_reports_its_dead_engine(model_path):
    backend = LocalBackend(EngineConfig(model_path=model_path, n_slots=1, n_ctx_per_slot=256,
                                        n_threads=TEST_THREADS))
    try:
        assert backend.alive and backend.failure is None
        inject_snapshot_fault(backend.engine).set()
        result = backend.submit(ask("Hi.", max_tokens=4)).result(timeout=60)
        assert result.finish_reason == "error" and "KV snapshot" in result.error
        assert "KV snapshot" in backend.failure and not backend.alive
        with pytest.raises(EngineStopped):
            backend.submit(ask("Again."))
    finally:
        backend.close()
