"""Engine scenarios: throughput through the public API, TTFT under load, and long-prompt admission.

Everything is timed from the engine's own per-step events (the same ones the GUI gets), so the figures
include the engine's bookkeeping, text decoding and event delivery.
"""

from __future__ import annotations

import time

from app.backends.workload import Timeline, fixed_length_request, median, percentile
from app.engine import Engine, EngineConfig, RequestState


def _engine(model_path, threads: int, n_slots: int, n_ctx: int, **overrides) -> Engine:
    return Engine(EngineConfig(model_path=model_path, n_slots=n_slots, n_ctx_per_slot=n_ctx, n_threads=threads,
                               **overrides))


def engine_decode_tps(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int,
                      request_fields: dict | None = None, **overrides) -> float:
    """Aggregate decode t/s while all N requests generate together (from the step where the last one got its
    first token to the step where the first one ends): the steady state of N concurrent streams.
    `request_fields` go into every request (logprobs, grammar...)."""
    with _engine(model_path, threads, len(prompts), n_ctx, **overrides) as engine:
        return steady_decode_tps(engine, prompts, max_tokens, request_fields)


def steady_decode_tps(backend, prompts: list[str], max_tokens: int, request_fields: dict | None = None) -> float:
    """Aggregate decode t/s of anything with submit/subscribe (an engine, a Backend) from the step where the
    last request got its first token to the first finish. Raises if a request failed or they never overlapped."""
    timeline = Timeline(expected=len(prompts))
    backend.subscribe(timeline.on_step)
    handles = [backend.submit(fixed_length_request(p, max_tokens, **(request_fields or {}))) for p in prompts]
    results = [h.result(timeout=600) for h in handles]
    failed = [r.error for r in results if r.finish_reason == "error"]
    if failed:
        raise RuntimeError(f"{len(failed)} request(s) failed: {failed[0]}")
    if timeline.all_generating_at is None or timeline.first_finish_at is None:
        raise RuntimeError("the requests never all generated at once (too few slots on the server?)")
    tokens = timeline.tokens_at_first_finish - timeline.tokens_when_all_generating
    return tokens / (timeline.first_finish_at - timeline.all_generating_at)


def _wait_generating(handles, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while any(h.state != RequestState.GENERATING for h in handles):
        if time.monotonic() > deadline:
            raise TimeoutError("load requests did not start generating")
        time.sleep(0.005)


def ttft_loaded_vs_idle(model_path, load_prompts: list[str], newcomer: str, threads: int,
                        **overrides) -> dict[str, float]:
    """A newcomer's TTFT on an idle engine, and while len(load_prompts) requests decode."""
    with _engine(model_path, threads, len(load_prompts) + 1, 1024, **overrides) as engine:
        idle = engine.submit(fixed_length_request(newcomer, 1)).result(timeout=120).ttft_s
        engine.clear_prompt_cache()  # the loaded newcomer must prefill like the idle one did
        load = [engine.submit(fixed_length_request(p, 900)) for p in load_prompts]
        _wait_generating(load)
        time.sleep(0.2)  # let the batch settle into steady decode steps
        loaded = engine.submit(fixed_length_request(newcomer, 1)).result(timeout=120).ttft_s
        engine.cancel_all()
    return {"idle_s": idle, "loaded_s": loaded}


def long_prompt_admission(model_path, running_prompts: list[str], long_prompt: str, threads: int,
                          steady_seconds: float = 1.5, **overrides) -> dict[str, float]:
    """Running streams' p99 gap during a long prompt's prefill vs their steady median; newcomer TTFT vs idle."""
    with _engine(model_path, threads, len(running_prompts) + 1, 2048, **overrides) as engine:
        idle_ttft = engine.submit(fixed_length_request(long_prompt, 1)).result(timeout=300).ttft_s
        engine.clear_prompt_cache()  # measured again below: it must be prefilled again, not reused
        timeline = Timeline()
        engine.subscribe(timeline.on_step)
        running = [engine.submit(fixed_length_request(p, 1900)) for p in running_prompts]
        _wait_generating(running)
        steady_start = time.perf_counter()
        time.sleep(steady_seconds)
        submitted = time.perf_counter()
        result = engine.submit(fixed_length_request(long_prompt, 1)).result(timeout=300)
        first_token = submitted + result.ttft_s
        steady = [g for h in running for g in timeline.gaps(h.id, steady_start, submitted)]
        during = [g for h in running for g in timeline.gaps(h.id, submitted, first_token)]
        engine.cancel_all()
    return {"steady_median_gap_s": median(steady), "prefill_p99_gap_s": percentile(during, 99),
            "loaded_ttft_s": result.ttft_s, "idle_ttft_s": idle_ttft}
