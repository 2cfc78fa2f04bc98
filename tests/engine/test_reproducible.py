"""Reproducible mode on the real model: a request's token ids are the same alone, beside 11 others, beside
unrelated traffic arriving at random moments, from the prompt cache, from a fan-out copy and as a follower."""

import random

import pytest

from app.bench.speculative import SENTENCES as BENCH_SENTENCES
from app.engine import GenerationRequest, SamplingParams
from tests.conftest import TEST_THREADS, assert_kv_accounted

SENTENCES = BENCH_SENTENCES[:6]  # the speculative benchmark's passage, its first six sentences
# Mixed lengths, from a short question to about 900 prompt tokens (each prompt is prefilled alone for the
# reference and again in every test: at ~60 prompt tokens a second on one thread, the suite's longest module).
SIZES = [1, 4, 14, 30, 50, 64]
QUESTIONS = ["Summarise this in one sentence.", "What is the main topic?", "List three details.",
             "Which place is mentioned first?", "Write a title for it.", "What happens in spring?"]


def chat_prompts() -> list[list[dict]]:
    prompts = []
    for i, size in enumerate(SIZES):
        body = " ".join(SENTENCES[(i + j) % len(SENTENCES)] for j in range(size))
        prompts.append([{"role": "user", "content": f"{body}\n\n{QUESTIONS[i % len(QUESTIONS)]}"}])
    return prompts


def requests() -> list[GenerationRequest]:
    """6 greedy and 6 seeded requests, the same prompts."""
    out = []
    for i, messages in enumerate(chat_prompts()):
        out.append(GenerationRequest(messages=messages, max_tokens=24, sampling=SamplingParams(temperature=0.0)))
        out.append(GenerationRequest(messages=messages, max_tokens=24,
                                     sampling=SamplingParams(temperature=0.9, seed=1000 + i)))
    return out


def ids(handles) -> list[list[int]]:
    results = [h.result(timeout=600) for h in handles]
    assert all(r.finish_reason in ("stop", "length") for r in results), [r.error for r in results]
    return [r.token_ids for r in results]


@pytest.fixture(scope="module")
def cold_ids(model_path):
    """Every request alone on a cache-less engine: the reference."""
    from app.engine import Engine, EngineConfig
    with Engine(EngineConfig(model_path=model_path, n_slots=8, reproducible=True, prompt_cache=False,
                             n_threads=TEST_THREADS)) as engine:
        prompt_lengths = []
        reference = []
        for request in requests():
            handle = engine.submit(request)
            reference.append(ids([handle])[0])
            prompt_lengths.append(handle.result().prompt_tokens)
    assert max(prompt_lengths) >= 850 and min(prompt_lengths) <= 60  # long and short prompts mixed
    return reference


def test_planner_pieces_stay_below_the_attention_tile_whatever_the_load():
    """Reproducible mode: the pacer still decides how many prompt tokens a step takes, but no piece reaches
    ggml's 64-token flash-attention tile, and pieces of one prompt follow each other without gaps."""
    from app.engine.scheduler import PrefillPacer, plan_step
    from app.engine.types import EngineConfig

    class Seq:
        def __init__(self, n, pending=None):
            self.prompt, self.n_prompt_done, self.pending_token, self.donor = [0] * n, 0, pending, None

        @property
        def prompt_remaining(self):
            return len(self.prompt) - self.n_prompt_done

        text_ready = prompt_remaining  # a text-only prompt: no image stops a run (vision_step.py)
        has_images = False  # nor is its text paced as an image's (scheduler.py)

    config = EngineConfig(model_path="x", reproducible=True)
    for decoding in (0, 1, 7):
        prompts = [Seq(150), Seq(70)]
        running = [Seq(1, pending=1) for _ in range(decoding)] + prompts
        pacer = PrefillPacer(config)
        pacer.observe(decoding or 1, 0, 0.01 * (1 + decoding))  # a different load, a different allowance
        pacer.observe(decoding or 1, 40, 0.05)
        while any(p.prompt_remaining for p in prompts):
            plan = plan_step(running, config, 128, None, pacer)
            assert plan.prefill and plan.n_prefill <= 128
            for seq, n in plan.prefill:
                assert 1 <= n <= config.prefill_chunk < 64
                seq.n_prompt_done += n
        assert all(p.n_prompt_done == len(p.prompt) for p in prompts)


def test_alone_and_together_give_the_same_tokens(make_engine, cold_ids):
    engine = make_engine(n_slots=8, reproducible=True)
    together = ids([engine.submit(r) for r in requests()])
    assert together == cold_ids
    assert engine.stats().reproducible is True
    assert_kv_accounted(engine)


def test_unrelated_traffic_at_random_moments_changes_nothing(make_engine, cold_ids):
    engine = make_engine(n_slots=8, reproducible=True)
    rng = random.Random(7)
    moments = sorted(rng.sample(range(1, 120), 10))  # engine steps at which traffic arrives
    traffic = []

    def on_step(event):
        while moments and event.step >= moments[0]:
            moments.pop(0)
            words = " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 12)))
            traffic.append(engine.submit(GenerationRequest(
                messages=[{"role": "user", "content": words}], max_tokens=rng.randint(4, 40),
                sampling=SamplingParams(temperature=rng.choice([0.0, 0.7]), seed=rng.randint(0, 99)))))

    engine.subscribe(on_step)
    order = list(range(len(requests())))
    rng.shuffle(order)
    handles = {}
    for i in order:  # submitted one after another while the engine is already busy
        handles[i] = engine.submit(requests()[i])
    assert [ids([handles[i]])[0] for i in range(len(order))] == cold_ids
    assert traffic and all(h.result(timeout=600).finish_reason in ("stop", "length") for h in traffic)
    assert_kv_accounted(engine)


def test_prompt_cache_and_coalescing_give_the_same_tokens(make_engine, cold_ids):
    engine = make_engine(n_slots=8, reproducible=True)
    reqs = requests()
    assert ids([engine.submit(r) for r in reqs[:8]]) == cold_ids[:8]  # fills the cache
    rerun = [engine.submit(r) for r in reqs[:8]]  # whole prompts from the cache, logits included
    followers = [engine.submit(r) for r in reqs[:8:2]]  # identical greedy requests: coalesced
    assert ids(rerun) == cold_ids[:8]
    assert ids(followers) == cold_ids[:8:2]
    assert all(h.result().cached_tokens == h.result().prompt_tokens for h in rerun)
    assert engine.stats().coalesced >= 1
    assert_kv_accounted(engine)


def test_fan_out_copies_give_the_same_tokens(make_engine, cold_ids):
    engine = make_engine(n_slots=8, reproducible=True)  # empty cache: reuse can only come from copies
    handles = [engine.submit(r) for r in requests()[4:]]  # greedy and seeded pairs of one prompt each
    assert ids(handles) == cold_ids[4:]
    assert any(h.result().cached_tokens for h in handles)
    assert_kv_accounted(engine)
