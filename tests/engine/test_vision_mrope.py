"""M-RoPE images in the engine: the tiny Qwen2-VL-style pair of tests/fixtures/vision_qwen2vl.py.

An image of nx x ny tokens takes max(nx, ny) positions (positions.py): what is checked here is that the engine
answers it, that llama.cpp's KV positions are what the engine's records say (prompt cache, fan-out copies,
replies), and that a request's tokens are the same alone, batched, from the cache or not. Token parity with
llama-server --mmproj is in tests/backends/test_vision_mrope_server.py.
"""

import pytest

from app.engine import GenerationRequest
from app.engine.vision.positions import ImageSpan, PositionMap
from tests.conftest import GREEDY, assert_kv_accounted
from tests.fixtures.vision_gguf import about, sample_png
from tests.fixtures.vision_qwen2vl import tiny_qwen2vl

WIDE, TALL = sample_png(0, 64, 32), sample_png(2, 24, 56)  # 8 x 4 and 3 x 7 tokens: 8 and 7 positions


@pytest.fixture
def mrope(make_engine):
    model, mmproj = tiny_qwen2vl()

    def make(**overrides):
        return make_engine(model_path=model, mmproj=str(mmproj), **overrides)
    return make


def test_positions_of_a_prompt_with_an_image():
    # text 0..4, an 8 x 4 image at 5..36 (8 positions: 5..12), text from 37 on at 13
    positions = PositionMap([ImageSpan(5, 32, 8)])
    assert [positions.position(i) for i in (0, 4, 5, 6, 36, 37, 40)] == [0, 4, 5, 5, 5, 13, 16]
    assert [positions.boundary(i) for i in (4, 5, 6, 36, 37)] == [4, 5, 5, 5, 37]
    # llama.cpp's next position: an image's rows all sit at its first position (section t)
    assert [positions.kv_end(n) for n in (0, 5, 6, 37, 38)] == [0, 5, 6, 6, 14]
    two = PositionMap([ImageSpan(37, 21, 7), ImageSpan(5, 32, 8)])
    assert two.position(58) == 58 - 24 - 14 and two.kv_end(58) == two.position(37) + 1 == 14


def test_an_mrope_image_is_answered_with_its_positions(mrope):
    engine = mrope(n_slots=2)
    assert engine._images.store.mrope
    done = engine.submit(about(WIDE, "What is in this image?")).result(120)
    assert done.error is None and done.generated_tokens > 0
    assert done.prompt_tokens > 32 + 8  # the grid's 32 rows and the text around them
    assert_kv_accounted(engine)  # llama.cpp's next positions are the engine's: 8 for the image, not 32


def test_the_same_request_gives_the_same_tokens_alone_batched_and_cached(mrope):
    engine = mrope(n_slots=4)
    target = about(TALL, "Describe the colours.", max_tokens=16, image_first=False)
    alone = engine.submit(target).result(120).token_ids
    again = engine.submit(target).result(120)  # the whole prompt from the prompt cache
    assert again.token_ids == alone and again.cached_tokens > 0
    engine.clear_prompt_cache()
    others = [about(WIDE, "Count the shapes.", max_tokens=24), about(TALL, "Who made it?"),
              GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=24,
                                sampling=GREEDY)]
    handles = [engine.submit(r) for r in others[:2]] + [engine.submit(target), engine.submit(others[2])]
    batched = [h.result(300) for h in handles]
    assert all(d.error is None for d in batched)
    assert batched[2].token_ids == alone
    assert_kv_accounted(engine)


def test_panes_on_one_image_share_its_kv_and_answer_as_cold(mrope):
    """Fan-out copies and the prompt cache cut KV at positions, not token counts: each pane's reply is the one
    it gives cold, and only the first decodes the image."""
    engine = mrope(n_slots=4)
    questions = ["What is in this image?", "Describe the colours.", "Is there any text?", "Give it a title."]
    cold = []
    for q in questions:
        cold.append(engine.submit(about(WIDE, q)).result(120).token_ids)
        engine.clear_prompt_cache()
    done = [h.result(300) for h in [engine.submit(about(WIDE, q)) for q in questions]]
    assert [d.token_ids for d in done] == cold
    assert sum(d.cached_tokens >= 32 for d in done) == 3
    first = about(WIDE, "Give it a title.").messages  # a follow-up turn: the image and the first turn cached
    follow = GenerationRequest(messages=[*first, {"role": "assistant", "content": done[3].text},
                                         {"role": "user", "content": "Why?"}], max_tokens=12, sampling=GREEDY)
    warm = engine.submit(follow).result(120)
    engine.clear_prompt_cache()
    assert warm.cached_tokens >= 32 and warm.token_ids == engine.submit(follow).result(120).token_ids
    assert_kv_accounted(engine)


@pytest.mark.parametrize("reproducible", [False, True])
def test_reproducible_mode_gives_the_same_tokens_alone_and_batched(mrope, reproducible):
    engine = mrope(n_slots=3, reproducible=reproducible)
    target = about(WIDE, "What is the mood?", max_tokens=16)
    alone = engine.submit(target).result(120).token_ids
    engine.clear_prompt_cache()
    handles = [engine.submit(about(TALL, "Count the shapes.", max_tokens=20)), engine.submit(target),
               engine.submit(GenerationRequest(messages=[{"role": "user", "content": "Hi there"}], max_tokens=20,
                                               sampling=GREEDY))]
    assert handles[1].result(300).token_ids == alone
    assert all(h.result(300).error is None for h in handles)
    assert_kv_accounted(engine)
