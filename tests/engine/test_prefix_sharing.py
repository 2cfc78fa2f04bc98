"""Prompt cache, fan-out copies and coalescing on the real model: same tokens as a cold run, less prefill."""

import pytest

from app.engine import GenerationRequest, RequestState, SamplingParams
from app.engine.sharing.cache import PromptCache, common_prefix
from tests.conftest import GREEDY, ask, assert_kv_accounted

LONG = "Summarize this list: " + ", ".join(f"item {i} weighs {i * 7 % 13} kg" for i in range(40))
SEEDED = SamplingParams(temperature=0.8, seed=7)


def cold(make_engine, requests, **overrides):
    """Reference outputs from an engine that shares nothing."""
    engine = make_engine(n_slots=4, n_ctx_per_slot=1024, prompt_cache=False, **overrides)
    return [engine.submit(r).result(timeout=120) for r in requests]


@pytest.mark.parametrize("sampling", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_rerun_from_the_cache_prefills_nothing_and_gives_the_same_tokens(make_engine, sampling):
    request = ask(LONG, max_tokens=24, sampling=sampling)
    [reference] = cold(make_engine, [request])
    engine = make_engine(n_slots=4, n_ctx_per_slot=1024)
    first = engine.submit(request).result(timeout=120)
    prefilled = engine.stats().prompt_tokens_total
    again = engine.submit(request).result(timeout=120)
    assert first.cached_tokens == 0 and first.token_ids == reference.token_ids
    assert again.cached_tokens == again.prompt_tokens == first.prompt_tokens
    assert engine.stats().prompt_tokens_total == prefilled  # not one prompt token computed again
    assert again.token_ids == reference.token_ids
    assert_kv_accounted(engine)


def test_fan_out_copies_one_prefill_to_every_slot(make_engine):
    # Same prompt, different lengths: not identical requests, so each decodes in its own slot, in the same
    # steps as the others (so batch composition, a separate question: docs/engine.md, cannot tell them apart).
    requests = [ask(LONG, max_tokens=20 + i, ignore_eos=True) for i in range(4)]
    engine = make_engine(n_slots=4, n_ctx_per_slot=1024)
    results = [h.result(timeout=120) for h in [engine.submit(r) for r in requests]]
    n_prompt = results[0].prompt_tokens
    assert results[0].cached_tokens == 0 and all(r.cached_tokens == n_prompt for r in results[1:])
    assert engine.stats().prompt_tokens_total == n_prompt  # prefilled once for four
    assert engine.stats().coalesced == 0
    donor = results[0].token_ids
    assert all(r.token_ids[:20] == donor for r in results[1:])  # a copied prompt decodes as the computed one
    assert_kv_accounted(engine)


def test_a_shared_prefix_is_copied_and_the_rest_prefilled(make_engine):
    # The donor ends after its first token, so the copy's own decode runs alone, as the cold reference's does.
    donor = ask(LONG + " Answer in one word.", max_tokens=1)
    request = ask(LONG + " Which is heaviest?", max_tokens=16)
    [reference] = cold(make_engine, [request])
    engine = make_engine(n_slots=4, n_ctx_per_slot=1024)
    first, result = [h.result(timeout=120) for h in [engine.submit(donor), engine.submit(request)]]
    assert first.cached_tokens == 0 and 0 < result.cached_tokens < result.prompt_tokens
    assert engine.stats().prompt_tokens_total == first.prompt_tokens + result.prompt_tokens - result.cached_tokens
    assert result.token_ids == reference.token_ids
    assert_kv_accounted(engine)


@pytest.mark.parametrize("reproducible", [False, True])
def test_a_follow_up_turn_prefills_only_its_new_tokens(make_engine, reproducible):
    engine = make_engine(n_slots=2, n_ctx_per_slot=1024, reproducible=reproducible)
    turns = [{"role": "user", "content": LONG}]
    first = engine.submit(GenerationRequest(messages=turns, sampling=GREEDY, max_tokens=32)).result(timeout=120)
    turns += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "Now shorter."}]
    request = GenerationRequest(messages=turns, sampling=GREEDY, max_tokens=16)
    second = engine.submit(request).result(timeout=120)
    new_tokens = second.prompt_tokens - second.cached_tokens
    assert second.cached_tokens >= first.prompt_tokens  # the whole first prompt and most of the reply
    assert new_tokens <= 20, new_tokens  # "<|im_end|>", the new user turn and the assistant header
    if reproducible:  # the reply's KV was decoded one token at a time; a cold prefill gives the same bits
        [cold_run] = cold(make_engine, [request], reproducible=True)
        assert second.token_ids == cold_run.token_ids


def test_identical_requests_decode_once_and_each_gets_its_own_stream(make_engine):
    request = ask(LONG, max_tokens=24, ignore_eos=True)
    engine = make_engine(n_slots=4, n_ctx_per_slot=1024)
    during = []  # (active, slots busy) as each step ends: the followers are active but hold no slot
    engine.subscribe(lambda event: during.append((engine.stats().active, engine.stats().slots_busy))
                     if event.tokens else None)
    handles = [engine.submit(request) for _ in range(4)]
    streams = ["".join(h.stream(timeout=60)) for h in handles]
    results = [h.result(timeout=60) for h in handles]
    assert len({h.id for h in handles}) == 4 and len({r.request_id for r in results}) == 4
    assert len({tuple(r.token_ids) for r in results}) == 1 and all(r.generated_tokens == 24 for r in results)
    assert streams == [r.text for r in results] and len(set(streams)) == 1
    snap = engine.stats()
    assert snap.coalesced == 3 and snap.decode_tokens <= 24  # the model decoded one sequence
    assert (4, 1) in during and all(busy <= 1 for _, busy in during)  # 0 once the last step freed it
    assert all(r.cached_tokens == r.prompt_tokens for r in results[1:])
    assert_kv_accounted(engine)


def test_cancelling_a_follower_leaves_the_leader_and_cancelling_the_leader_promotes(make_engine):
    request = ask("Count from one to forty in words.", max_tokens=60, ignore_eos=True)
    [reference] = cold(make_engine, [request])
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    leader, follower, spare = (engine.submit(request) for _ in range(3))
    next(iter(leader.stream(timeout=60)))  # the leader is generating
    spare.cancel()
    leader.cancel()
    heir = follower.result(timeout=120)
    assert leader.result(timeout=5).finish_reason == "cancelled" and leader.state == RequestState.CANCELLED
    assert spare.result(timeout=5).finish_reason == "cancelled"
    assert heir.finish_reason == "length" and heir.token_ids == reference.token_ids
    assert engine.stats().coalesced == 2
    assert_kv_accounted(engine)


def test_unseeded_sampling_never_coalesces(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    request = ask("Say something.", max_tokens=8, sampling=SamplingParams(temperature=0.9))
    [h.result(timeout=60) for h in [engine.submit(request) for _ in range(3)]]
    assert engine.stats().coalesced == 0


def test_penalties_still_see_the_whole_prompt_when_it_comes_from_the_cache(make_engine):
    penalized = SamplingParams(temperature=0.0, repeat_penalty=1.5, penalty_last_n=512)
    request = ask(LONG, max_tokens=24, sampling=penalized)
    [reference] = cold(make_engine, [request])
    engine = make_engine(n_slots=2, n_ctx_per_slot=1024)
    engine.submit(request).result(timeout=120)
    again = engine.submit(request).result(timeout=120)
    assert again.cached_tokens == again.prompt_tokens and again.token_ids == reference.token_ids


def test_cache_choice_prefers_the_longest_prefix_then_the_least_recently_used():
    import numpy as np

    cache = PromptCache(3)
    cache.store(0, np.array([1, 2, 3, 4]), 4, np.zeros(5, np.float32))
    cache.store(1, np.array([1, 2, 9]), 0, None)
    assert common_prefix(np.array([1, 2, 3]), np.array([1, 2, 4])) == 2
    full = cache.choose({0, 1, 2}, np.array([1, 2, 3, 4]))
    assert (full.slot, full.tokens) == (0, 4) and full.logits is not None  # whole prompt, logits kept
    partial = cache.choose({1, 2}, np.array([1, 2, 9, 9]))
    assert (partial.slot, partial.tokens) == (1, 3)
    cache.store(1, np.array([5]), 0, None)
    assert cache.choose({1, 2}, np.array([7])).slot == 2  # nothing shared: the never-used slot first
    longest_left = cache.choose({1}, np.array([5]))
    assert longest_left.tokens == 0  # always at least one token to prefill when no logits are kept
