"""Prefix-sharing scenarios: fan-out TTFT, rerun TTFT, follow-up prefill and coalesced decode.

Each builds its own engine; figures come from Completions and the engine's own counters (prompt tokens
prefilled, tokens decoded), so "prefilled once" is counted, not inferred from timings.
"""

from __future__ import annotations

from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams

FANOUT = 8


def _engine(model_path, threads: int, n_slots: int, **overrides) -> Engine:
    return Engine(EngineConfig(model_path=model_path, n_slots=n_slots, n_ctx_per_slot=1024, n_threads=threads,
                               **overrides))


def _seeded(prompt: str, seed: int) -> GenerationRequest:
    return GenerationRequest(prompt=prompt, max_tokens=4, sampling=SamplingParams(temperature=0.8, seed=seed))


def fanout_and_rerun(model_path, prompt: str, threads: int, prompt_cache: bool = True) -> dict[str, float]:
    """One request alone (cold), the same again (rerun), then FANOUT copies with other seeds submitted
    together (the cache cleared first, so they share only with each other): times to first token."""
    with _engine(model_path, threads, FANOUT, prompt_cache=prompt_cache) as engine:
        cold = engine.submit(_seeded(prompt, 0)).result(timeout=300)
        rerun = engine.submit(_seeded(prompt, 0)).result(timeout=300)
        engine.clear_prompt_cache()
        engine.wait_idle(60)
        handles = [engine.submit(_seeded(prompt, seed)) for seed in range(1, FANOUT + 1)]
        last = max(h.result(timeout=600).ttft_s for h in handles)
    return {"cold_ttft_s": cold.ttft_s, "rerun_ttft_s": rerun.ttft_s, "fanout_last_ttft_s": last,
            "prompt_tokens": cold.prompt_tokens}


def followup_prefill(model_path, first_message: str, threads: int, reproducible: bool = False) -> dict[str, float]:
    """A three-turn chat: how many prompt tokens the third request prefilled, against the tokens its new turn
    added (its prompt minus the second request's prompt and reply) and against its whole prompt, in either
    mode (reproducible mode reuses a decoded reply too: docs/engine.md)."""
    follow_ups = ["Say that again, shorter.", "Now give it a title."]
    with _engine(model_path, threads, 2, reproducible=reproducible) as engine:
        turns = [{"role": "user", "content": first_message}]
        result = None
        for message in [None, *follow_ups]:
            if message is not None:
                turns += [{"role": "assistant", "content": result.text}, {"role": "user", "content": message}]
            previous = result
            result = engine.submit(GenerationRequest(messages=list(turns), max_tokens=48,
                                                     sampling=SamplingParams(temperature=0.0))).result(timeout=300)
    prefilled = result.prompt_tokens - result.cached_tokens
    new_turn = result.prompt_tokens - previous.prompt_tokens - previous.generated_tokens
    return {"prefilled": prefilled, "new_turn_tokens": new_turn, "conversation_tokens": result.prompt_tokens}


def coalesced_decode(model_path, prompt: str, threads: int, copies: int = 4) -> dict[str, float]:
    """Tokens the model decoded for `copies` identical greedy requests, and for one."""
    request = GenerationRequest(prompt=prompt, max_tokens=64, ignore_eos=True,
                                sampling=SamplingParams(temperature=0.0))
    decoded = {}
    for n in (1, copies):
        with _engine(model_path, threads, copies) as engine:
            for handle in [engine.submit(request) for _ in range(n)]:
                handle.result(timeout=300)
            decoded[n] = engine.stats().decode_tokens
    return {"one": decoded[1], "identical": decoded[copies]}
