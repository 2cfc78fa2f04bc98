"""Images in the engine: SmolLM2-135M with the tiny random projector of tests/fixtures/vision_gguf.py.

The replies mean nothing (random weights); what is checked is what the engine does with images: each distinct
image is encoded once however many panes ask about it, a request gives the same tokens alone or in a batch,
and images it cannot take are refused with a message naming why. Token parity with llama-server --mmproj is in
tests/backends/test_vision_server.py.
"""

import base64
import subprocess
import sys
from pathlib import Path

import llama_cpp
import pytest

from app.engine import EngineConfig, GenerationRequest, RequestState
from app.engine.scheduler import PrefillPacer
from app.engine.vision.media import MARKER
from app.engine.vision.step import image_piece_rows
from tests.conftest import GREEDY, assert_kv_accounted
from tests.fixtures.vision_gguf import IMAGE_TOKENS, about, data_url, sample_png, tiny_mmproj

QUESTIONS = ["What is in this image?", "Describe the colours.", "Is there any text?", "Count the shapes.",
             "What is the mood?", "Where was it taken?", "Who made it?", "Give it a title."]


def image_part(png: bytes, name: str | None = None) -> dict:
    part = {"type": "image_url", "image_url": {"url": data_url(png)}}
    if name:
        part["image_url"]["name"] = name
    return part


@pytest.fixture
def vision(make_engine):
    def make(**overrides):
        return make_engine(mmproj=str(tiny_mmproj()), **overrides)
    return make


def test_an_image_is_tokenised_with_the_marker_and_answered(vision):
    engine = vision(n_slots=2)
    request = about(sample_png(0), "What is in this image?")
    assert f"<|im_start|>user\n{MARKER}What is in this image?<|im_end|>" in engine.render_prompt(request)
    done = engine.submit(request).result(120)
    assert done.error is None and done.generated_tokens > 0
    assert done.prompt_tokens > IMAGE_TOKENS
    assert engine.stats().images_encoded == 1
    assert_kv_accounted(engine)


def test_eight_panes_on_one_image_encode_it_once(vision):
    engine = vision(n_slots=8)
    png = sample_png(1)
    handles = [engine.submit(about(png, q)) for q in QUESTIONS]
    done = [h.result(300) for h in handles]
    assert all(d.error is None and d.generated_tokens > 0 for d in done)
    stats = engine.stats()
    assert (stats.images_encoded, stats.images_reused) == (1, 7)
    assert sum(d.cached_tokens >= IMAGE_TOKENS for d in done) == 7  # the image's KV was copied, not decoded
    assert engine.submit(about(png, "Once more?")).result(120).error is None
    assert engine.stats().images_encoded == 1  # kept: asked again later, still not encoded again
    assert_kv_accounted(engine)


def test_the_same_request_gives_the_same_tokens_alone_and_in_a_batch(vision):
    engine = vision(n_slots=4)
    target = about(sample_png(2), "Describe the colours.", max_tokens=16, image_first=False)
    alone = engine.submit(target).result(120).token_ids
    engine.clear_prompt_cache()
    others = [about(sample_png(0), "Count the shapes.", max_tokens=24), about(sample_png(1), "Who made it?"),
              GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=24,
                                sampling=GREEDY)]
    handles = [engine.submit(r) for r in others[:2]] + [engine.submit(target), engine.submit(others[2])]
    batched = [h.result(300) for h in handles]
    assert all(d.error is None for d in batched)
    assert batched[2].token_ids == alone


def test_a_model_without_its_projector_refuses_an_image(make_engine):
    engine = make_engine(n_slots=1)
    done = engine.submit(about(sample_png(0), "What is this?")).result(60)
    assert done.finish_reason == "error" and done.error_kind == "prompt"
    assert "without a vision projector (mmproj)" in done.error
    assert engine.submit(GenerationRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                           sampling=GREEDY)).result(60).error is None


def test_an_image_that_cannot_be_decoded_is_named(vision):
    engine = vision(n_slots=1)
    garbage = {"type": "image_url", "image_url": {"url": "data:image/png;base64,"
                                                  + base64.b64encode(b"not a picture").decode(), "name": "cat.png"}}
    request = GenerationRequest(messages=[{"role": "user", "content": [{"type": "text", "text": "Look:"}, garbage]}],
                                max_tokens=4, sampling=GREEDY)
    done = engine.submit(request).result(60)
    assert done.finish_reason == "error" and done.error_kind == "prompt"
    assert "message 1, part 2 (cat.png)" in done.error and "cannot be decoded" in done.error
    not_base64 = GenerationRequest(messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}, {"type": "text", "text": "?"}]}])
    refused = engine.submit(not_base64).result(60)
    assert refused.error_kind == "prompt" and "data URLs" in refused.error
    assert engine.submit(about(sample_png(0), "And this one?", max_tokens=4)).result(60).error is None


def test_an_image_that_does_not_fit_the_slot_says_the_sizes(vision):
    engine = vision(n_slots=1, n_ctx_per_slot=64)
    done = engine.submit(about(sample_png(0), "What is in this image?")).result(60)
    assert done.error_kind == "context"
    assert f"{IMAGE_TOKENS} of them for 1 image," in done.error and "a slot holds 64" in done.error


def test_a_step_with_an_image_piece_takes_no_text_of_that_prompt(vision):
    """An image piece is its prompt's share of a step (vision_step.py): the text after the image waits for the
    next step, so generating panes never wait for an image piece and a text piece of one prompt in one step
    (the longest gap while an image was prefilled, docs/benchmarks.md "Images")."""
    engine = vision(n_slots=2)
    step, pieces = [0], []
    step_fn, image_fn, fill_fn = engine._step.run, engine._images.piece, engine._step.fill_batch

    def counted(events):
        step[0] += 1
        return step_fn(events)

    def image(seq, events):
        pieces.append((step[0], seq.id, "image"))
        return image_fn(seq, events)

    def fill(plan, pads=()):
        pieces.extend((step[0], seq.id, "text") for seq, _ in plan.prefill)
        return fill_fn(plan, pads)

    engine._step.run, engine._images.piece, engine._step.fill_batch = counted, image, fill
    stream = engine.submit(GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}],
                                             max_tokens=48, ignore_eos=True, sampling=GREEDY))
    done = engine.submit(about(sample_png(0), "What is in this image?", max_tokens=4)).result(120)
    assert done.error is None and stream.result(120).error is None
    image_steps = {(s, rid) for s, rid, kind in pieces if kind == "image"}
    text_steps = {(s, rid) for s, rid, kind in pieces if kind == "text"}
    assert {rid for _, rid in image_steps} == {done.request_id}  # the image was decoded in pieces
    assert any(rid == done.request_id and s > max(image_steps)[0] for s, rid in text_steps)  # then its question
    assert not image_steps & text_steps


def test_a_pane_whose_question_begins_like_the_donors_does_not_wait_a_step_for_it(vision):
    """"What is the mood?" shares the image and "What is" with "What is in this image?": its copy does not wait
    for the donor to decode those two words (a step later, beside the others' first tokens) but takes the image
    when it is there and prefills its question in the same step as the donor (sharing.py, `_donor_ready`).
    The replies are those of each request alone."""
    engine = vision(n_slots=2)
    png = sample_png(1)
    requests = [about(png, "What is in this image?"), about(png, "What is the mood?")]
    alone = []
    for request in requests:
        alone.append(engine.submit(request).result(120).token_ids)
        engine.clear_prompt_cache()
    engine.wait_idle(60)
    first_step: dict[int, int] = {}
    engine.subscribe(lambda event: [first_step.setdefault(rid, event.step) for rid, state in event.states.items()
                                    if state is RequestState.GENERATING])
    with engine._cond:  # both queued before the engine thread admits either: one is the other's donor
        handles = [engine.submit(r) for r in requests]
    done = [h.result(120) for h in handles]
    assert [d.token_ids for d in done] == alone
    assert done[1].cached_tokens >= IMAGE_TOKENS  # the image's KV was copied
    assert first_step[done[0].request_id] == first_step[done[1].request_id]
    assert_kv_accounted(engine)


def test_eight_panes_on_one_image_copy_it_in_one_step_from_one_serialisation(vision, monkeypatch):
    """The seven copies of the image's KV are made in one step from one serialisation of the donor's cells
    (context.py, `copy_prefix(again=True)`), all eight first tokens come in that step, and every reply is the
    one its request gives alone."""
    engine = vision(n_slots=8)
    png = sample_png(1)
    alone = []
    for question in QUESTIONS:
        alone.append(engine.submit(about(png, question)).result(120).token_ids)
        engine.clear_prompt_cache()
    engine.wait_idle(60)
    serialised, real = [], llama_cpp.llama_state_seq_get_data
    monkeypatch.setattr(llama_cpp, "llama_state_seq_get_data",
                        lambda *args: serialised.append(args[-1]) or real(*args))
    first_step: dict[int, int] = {}
    engine.subscribe(lambda event: [first_step.setdefault(rid, event.step) for rid, state in event.states.items()
                                    if state is RequestState.GENERATING])
    with engine._cond:  # all queued before the engine thread admits any
        handles = [engine.submit(about(png, q)) for q in QUESTIONS]
    done = [h.result(300) for h in handles]
    assert [d.token_ids for d in done] == alone
    assert sum(d.cached_tokens >= IMAGE_TOKENS for d in done) == 7
    assert len(serialised) == 1  # seven copies, one serialisation
    assert len({first_step[d.request_id] for d in done}) == 1
    assert_kv_accounted(engine)


def test_time_spent_on_a_prompt_outside_its_pieces_comes_out_of_its_image_piece():
    """Beside generating panes an image piece takes what the pacer allows one prompt at `image_step_factor` x
    their step (below the text prompts' `mixed_step_factor`: room for a step slowed by another process), less
    the rows that the iteration's admission, prefix copy and encode of that prompt cost at the pacer's per-token
    estimate; nothing when that leaves less than the minimum piece (vision_step.py, `image_piece_rows`)."""
    config = EngineConfig(model_path="unused.gguf")
    pacer = PrefillPacer(config)
    pacer.decode_step_s[4], pacer.prefill_token_s = 0.030, 0.0035  # 4 streams: 30 ms a step, 3.5 ms a row
    allowance = int((config.image_step_factor - 1) * 0.030 / 0.0035)
    assert config.image_step_factor < config.mixed_step_factor and allowance < pacer.prefill_allowance(4)
    assert image_piece_rows(config, pacer, 0, spent_s=0.5) == config.prefill_chunk  # nobody generating
    assert image_piece_rows(config, pacer, 4) == allowance
    assert image_piece_rows(config, pacer, 4, spent_s=0.006) == allowance - 2
    assert image_piece_rows(config, pacer, 4, spent_s=0.015) == 0  # would leave fewer than the minimum
    assert allowance - 5 < config.min_prefill_per_step


def test_image_pieces_beside_generating_panes_teach_the_pacer_their_cost(vision):
    """An image piece the pacer sized is a direct measurement of a prompt row's cost beside running streams:
    the pacer takes its seconds per row into the estimate that sizes the next piece (scheduler.py,
    `observe_piece`), so pieces no longer run over the step's target when no text prompt had joined the
    streams before (the estimate was then the optimistic one of a pure prefill)."""
    pacer = PrefillPacer(EngineConfig(model_path="unused.gguf"))
    pacer.decode_step_s[4], pacer.prefill_token_s = 0.020, 0.0030
    pacer.observe_piece(8, 0.048)  # 6 ms a row: the first sample of its window
    assert pacer.prefill_token_s == 0.006
    engine = vision(n_slots=2)
    observed = []
    real = engine._pacer.observe_piece
    engine._pacer.observe_piece = lambda n, seconds: observed.append(n) or real(n, seconds)
    stream = engine.submit(GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}],
                                             max_tokens=64, ignore_eos=True, sampling=GREEDY))
    done = engine.submit(about(sample_png(0), "What is in this image?", max_tokens=4)).result(120)
    assert done.error is None and stream.result(120).error is None
    assert observed and all(0 < n <= engine.config.prefill_chunk for n in observed)


def test_the_images_a_prompt_holds_are_found_without_importing_numpy_ma():
    """`serials` runs at each admission of a request with images beside running ones (the images they pin). With
    np.unique its first call imported numpy.ma: 30 ms on the engine thread, measured in the admission of the
    second of 8 panes on one image, which all waited for it (docs/benchmarks.md, "Images")."""
    code = ("import sys, numpy as np; import app.engine.engine; "
            "from app.engine.vision.projector import placeholder, serials; "
            "assert 'numpy.ma' not in sys.modules; "
            "prompt = np.array([5, placeholder(3, 0), placeholder(3, 1), 7, placeholder(9, 0), 2], np.int32); "
            "assert serials(prompt) == {3, 9} and serials(np.array([1, 2], np.int32)) == set(); "
            "print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_eight_panes_questions_after_the_shared_image_go_into_one_llama_decode(vision):
    """Once the image's KV is copied, the eight questions (each a tail of ~10 tokens after the shared prefix) are
    decoded in one llama_decode (`EngineConfig.one_decode`: per-row kernels, so no ubatch shape changes a bit)
    and nothing else of their prompts is decoded after the image: the last pane's first token costs the shared
    prefix and one pass over the eight tails (docs/benchmarks.md, "Images")."""
    engine = vision(n_slots=8)
    png = sample_png(1)
    decodes = []
    real = engine._step.decode

    def recorded():
        batch = engine._ctx.batch
        decodes.append({int(s): int((batch.seq[:batch.n_tokens] == s).sum()) for s in set(batch.seq[:batch.n_tokens])})
        return real()

    engine._step.decode = recorded
    with engine._cond:  # all queued before the engine thread admits any
        handles = [engine.submit(about(png, q, max_tokens=2)) for q in QUESTIONS]
    done = [h.result(300) for h in handles]
    assert all(d.error is None for d in done)
    prompt_decodes = [d for d in decodes if max(d.values()) > 1]
    tails = prompt_decodes[-1]
    assert len(tails) == 8 and all(n > 1 for n in tails.values())  # every pane's question, in one decode
    before_image = prompt_decodes[0][0]  # the first pane's text before the image; then the image, in pieces
    assert sum(tails.values()) == sum(d.prompt_tokens - d.cached_tokens for d in done) - before_image - IMAGE_TOKENS
