"""Speculative decoding with a draft model (kind "draft") on the real model: SmolLM2 drafting for itself (the same
vocabulary; a smaller model of the family would be the real use). The same tokens as without it, alone and beside
other requests; drafts accepted; the draft context's KV kept in step; a draft model with another vocabulary, or a
file that is not one, refused with a message naming the files while the engine goes on serving."""

import pytest

from app.engine import GenerationRequest, SamplingParams, Speculation
from tests.conftest import assert_kv_accounted
from tests.engine.test_speculative import COPY, FREE, PASSAGE, request

GREEDY = SamplingParams(temperature=0.0)


def draft_spec(path, **kwargs) -> Speculation:
    return Speculation(mode="on", kind="draft", draft_model=str(path), **kwargs)


def assert_draft_kv_in_step(engine) -> None:
    """Every draft context's KV per slot is exactly what its records say it holds."""
    assert engine.wait_idle(30)
    for model in engine._speculation.draft_models._loaded.values():
        assert [model.ctx.next_position(slot) for slot in range(engine.config.n_slots)] == \
            [len(held) for held in model.held]


@pytest.fixture(scope="module")
def vocab_variant(model_path, tmp_path_factory):
    from tests.fixtures.gguf_variants import write_vocab_variant

    return write_vocab_variant(model_path, tmp_path_factory.mktemp("draft") / "smollm2-other-vocab.gguf")


def test_draft_model_gives_the_same_greedy_tokens_alone_and_beside_others(make_engine, model_path):
    engine = make_engine(n_slots=4)
    spec = draft_spec(model_path)
    texts = (COPY, FREE)
    plain = [engine.submit(request(text)).result(600) for text in texts]
    alone = [engine.submit(request(text, spec)).result(600) for text in texts]
    handles = [engine.submit(request(text, spec)) for text in texts]  # two drafting, beside two others
    handles += [engine.submit(request(COPY, Speculation(mode="on"))), engine.submit(request(FREE, max_tokens=30))]
    together = [h.result(600) for h in handles]
    for reference, *runs in zip(plain, alone, together[:2], strict=True):
        assert reference.finish_reason in ("stop", "length")
        for completion in runs:
            assert completion.token_ids == reference.token_ids and completion.text == reference.text
            assert 0 < completion.accepted_tokens <= completion.drafted_tokens
    assert together[2].token_ids == plain[0].token_ids
    assert alone[0].accepted_tokens > 0.8 * alone[0].drafted_tokens  # a model drafting itself: nearly all kept
    stats = engine.stats()
    assert stats.accepted_tokens == sum(c.accepted_tokens for c in alone + together)
    assert_kv_accounted(engine)
    assert_draft_kv_in_step(engine)


def test_sampled_requests_keep_their_tokens_with_a_draft_model(make_engine, model_path):
    engine = make_engine(n_slots=2)
    seeded = SamplingParams(temperature=0.9, seed=7)
    plain = engine.submit(request(COPY, sampling=seeded)).result(600)
    spec = engine.submit(request(COPY, draft_spec(model_path, max_draft=4), sampling=seeded)).result(600)
    assert spec.token_ids == plain.token_ids and spec.drafted_tokens > 0
    assert_kv_accounted(engine)
    assert_draft_kv_in_step(engine)


def test_engine_draft_model_serves_requests_that_name_none(make_engine, model_path):
    engine = make_engine(n_slots=1, draft_model=str(model_path))
    plain = engine.submit(request(COPY, max_tokens=30)).result(600)
    spec = engine.submit(request(COPY, Speculation(mode="on", kind="draft"), max_tokens=30)).result(600)
    assert spec.token_ids == plain.token_ids and spec.accepted_tokens > 0


def test_a_long_prompt_catches_the_draft_model_up_over_several_steps(make_engine, model_path):
    """A prompt longer than the draft context's batch is caught up in pieces, then drafted from."""
    engine = make_engine(n_slots=1, max_batch_tokens=32, step_budget=8)
    text = PASSAGE * 3 + "\n\nRepeat the first sentence."
    plain = engine.submit(request(text, max_tokens=30)).result(600)
    spec = engine.submit(request(text, draft_spec(model_path), max_tokens=30)).result(600)
    assert spec.prompt_tokens > 100 and spec.token_ids == plain.token_ids and spec.accepted_tokens > 0
    assert_draft_kv_in_step(engine)


def test_a_draft_model_with_another_vocabulary_is_refused_and_the_engine_goes_on(make_engine, model_path,
                                                                                   vocab_variant):
    engine = make_engine(n_slots=2)
    refused = engine.submit(request(COPY, draft_spec(vocab_variant), max_tokens=10)).result(600)
    assert refused.finish_reason == "error" and refused.error_kind == "draft"
    assert vocab_variant.name in refused.error and model_path.name in refused.error
    assert "vocabularies differ" in refused.error and "token 1000" in refused.error
    served = engine.submit(request(COPY, max_tokens=10)).result(600)
    assert served.finish_reason in ("stop", "length") and served.generated_tokens > 0
    good = engine.submit(request(COPY, draft_spec(model_path), max_tokens=10)).result(600)
    assert good.token_ids == served.token_ids and good.drafted_tokens > 0
    assert_kv_accounted(engine)


def test_a_bad_draft_path_is_refused(make_engine, model_path, tmp_path):
    engine = make_engine(n_slots=1)
    missing = tmp_path / "nowhere.gguf"
    not_a_model = tmp_path / "notes.gguf"
    not_a_model.write_text("not a model")
    for path in (missing, not_a_model):
        result = engine.submit(request(COPY, draft_spec(path), max_tokens=8)).result(600)
        assert result.finish_reason == "error" and result.error_kind == "draft"
        assert path.name in result.error and model_path.name in result.error
    nameless = engine.submit(request(COPY, Speculation(mode="on", kind="draft"), max_tokens=8)).result(600)
    assert nameless.finish_reason == "error" and "needs a draft model" in nameless.error
    assert engine.submit(request(COPY, max_tokens=8)).result(600).generated_tokens > 0


def test_speculation_settings_check_the_draft_model_field(model_path):
    with pytest.raises(ValueError, match="draft_model"):
        Speculation(mode="on", kind="ngram", draft_model=str(model_path))
    assert Speculation(kind="draft", draft_model="~/x.gguf").draft_model.endswith("/x.gguf")
    assert not Speculation(kind="draft", draft_model="~/x.gguf").draft_model.startswith("~")
    assert GenerationRequest(prompt="x", speculative=Speculation(kind="draft")).speculative.kind == "draft"


def test_a_request_that_coalesces_is_refused_its_bad_draft_model_too(make_engine, tmp_path):
    """An identical request decoding already serves a copy whatever its speculation (lossless), but a draft model
    that cannot be used is reported as it is for a request admitted on its own."""
    engine = make_engine(n_slots=2)
    junk = tmp_path / "junk.gguf"
    junk.write_text("not a model")
    leader = engine.submit(request(PASSAGE * 2 + "\n\nRepeat it.", max_tokens=200, ignore_eos=True))
    follower = engine.submit(request(PASSAGE * 2 + "\n\nRepeat it.", draft_spec(junk), max_tokens=200,
                                     ignore_eos=True))
    refused = follower.result(600)
    assert refused.finish_reason == "error" and refused.error_kind == "draft" and "junk.gguf" in refused.error
    assert leader.result(600).generated_tokens == 200
    assert engine.stats().coalesced == 0
