"""Reproducible mode in one llama_decode a step (EngineConfig.one_decode): on ggml's per-row CPU kernels with
SmolLM2's row-invariant (Q4_1) layer matrices, a token's bits do not depend on the other rows of its ubatch, so
decode tokens and prompt tokens of several sequences share one decode and still give the tokens each request
gets alone through the split path (decode tokens apart, prompt pieces of at most 48 tokens, each sampled
before the next). Prompt lengths from a short question to ~600 tokens, past the 257 KV cells where flash
attention's split-KV path would take a lone token on ggml's default kernels (docs/engine.md)."""

import pytest

from app.engine import GenerationRequest, SamplingParams
from tests.conftest import TEST_THREADS, assert_kv_accounted

PASSAGE = ("The river bends twice before it reaches the old mill at the edge of town. Every spring the orchard "
           "fills with bees and the farmers count the blossoms. A lighthouse keeper writes down the colour of the "
           "sea each morning. ")
REPEATS = [0, 1, 3, 6, 12]  # ~20 to ~600 prompt tokens


def requests() -> list[GenerationRequest]:
    """A greedy and a seeded request for each prompt length."""
    out = []
    for i, repeats in enumerate(REPEATS):
        messages = [{"role": "user", "content": PASSAGE * repeats + f"Question {i}: what comes next?"}]
        out.append(GenerationRequest(messages=messages, max_tokens=20, sampling=SamplingParams(temperature=0.0)))
        out.append(GenerationRequest(messages=messages, max_tokens=20,
                                     sampling=SamplingParams(temperature=0.9, seed=500 + i)))
    return out


def finished(handles):
    results = [h.result(timeout=600) for h in handles]
    assert all(r.finish_reason in ("stop", "length") for r in results), [r.error for r in results]
    return results


@pytest.fixture(scope="module")
def split_alone(model_path):
    """Each request alone through the split path (one_decode off): the reference, with its prompt lengths."""
    from app.engine import Engine, EngineConfig
    with Engine(EngineConfig(model_path=model_path, n_slots=8, reproducible=True, prompt_cache=False,
                             one_decode=False, n_threads=TEST_THREADS)) as engine:
        results = [finished([engine.submit(r)])[0] for r in requests()]
        assert engine.stats().decodes > engine.stats().steps  # the split path: pieces apart
    lengths = [r.prompt_tokens for r in results]
    assert min(lengths) < 48 and max(lengths) > 512  # short, and past the split-KV threshold
    return [r.token_ids for r in results]


def test_packed_in_one_decode_gives_the_tokens_of_the_split_path_alone(make_engine, split_alone):
    engine = make_engine(n_slots=8, reproducible=True, prompt_cache=False)
    assert engine._reproducible.lone_token_exact  # the per-row kernels are on and SmolLM2's matrices are row-invariant
    together = finished([engine.submit(r) for r in requests()])  # 10 requests, 8 slots: prompts join decodes
    assert [r.token_ids for r in together] == split_alone
    assert_kv_accounted(engine)


def test_one_request_after_another_while_others_decode(make_engine, split_alone):
    """Prompts admitted one by one beside running streams: every step mixes decode tokens and prompt pieces."""
    engine = make_engine(n_slots=4, reproducible=True, prompt_cache=False)
    handles = []
    for r in reversed(requests()):  # the long prompts last, joining streams that are already decoding
        handles.append(engine.submit(r))
        next(iter(handles[-1].stream(timeout=600)), None)  # its first text: it decodes when the next joins
    results = finished(handles)
    assert [r.token_ids for r in reversed(results)] == split_alone


def test_a_reproducible_step_is_one_llama_decode(make_engine):
    """With the per-row kernels every step, mixed or not, is a single llama_decode (the split path makes one
    for the decode tokens and one per prompt piece)."""
    engine = make_engine(n_slots=4, reproducible=True, prompt_cache=False)
    finished([engine.submit(r) for r in requests()[:6]])
    assert engine.wait_idle(60)  # the last step's figures are recorded after its requests have ended
    stats = engine.stats()
    assert stats.placeholders == 0 and stats.steps > 0
    assert stats.decodes == stats.steps
