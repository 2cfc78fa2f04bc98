"""Audio in the engine: SmolLM2-135M with the tiny random Ultravox projector of tests/fixtures/audio_gguf.py.

What is checked is what the engine does with clips: wav, flac and ogg decode (resampled to the projector's rate),
each distinct clip window is encoded once however many panes ask about it, a request gives the same tokens alone
or in a batch (reproducible mode or not), and clips it cannot take are refused with a message naming why and
never quoting the clip. Token parity with llama-server --mmproj is in tests/backends/test_audio_server.py.
"""

import base64
import threading

import miniaudio
import pytest

from app.engine import GenerationRequest
from app.engine.vision.media import MARKER
from tests.conftest import GREEDY, assert_kv_accounted, assert_same_alone_and_batched
from tests.fixtures.audio_gguf import about, audio_part, encode, sample_clip, tiny_audio_mmproj
from tests.fixtures.vision_gguf import tiny_mmproj

WINDOW_TOKENS = 150  # one 30 s window of the tiny projector
QUESTIONS = ["What is this sound?", "Transcribe it.", "Is it speech?", "How loud is it?",
             "What instrument?", "Describe it.", "How long is it?", "Give it a title."]


@pytest.fixture
def hearing(make_engine):
    def make(**overrides):
        return make_engine(mmproj=str(tiny_audio_mmproj()), **overrides)
    return make


def test_wav_flac_and_ogg_clips_are_heard_and_a_resampled_clip_too(hearing):
    engine = hearing(n_slots=2)
    request = about(encode(sample_clip(0), "wav"), "What is this sound?", max_tokens=6)
    assert f"<|im_start|>user\n{MARKER}What is this sound?<|im_end|>" in engine.render_prompt(request)
    replies = {}
    for fmt, rate in (("wav", 16000), ("flac", 16000), ("ogg", 16000), ("wav", 44100)):
        done = engine.submit(about(encode(sample_clip(2, rate=rate), fmt, rate), "Describe it.", fmt,
                                   max_tokens=6)).result(120)
        assert done.error is None and done.generated_tokens > 0, (fmt, done.error)
        assert done.prompt_tokens > WINDOW_TOKENS
        replies[fmt, rate] = done.text
    assert engine.stats().clips_encoded == 4  # four different files: four clips
    assert_kv_accounted(engine)


def test_eight_panes_on_one_clip_encode_it_once(hearing):
    engine = hearing(n_slots=8)
    clip = encode(sample_clip(1))
    done = [h.result(300) for h in [engine.submit(about(clip, q, max_tokens=4)) for q in QUESTIONS]]
    assert all(d.error is None and d.generated_tokens > 0 for d in done)
    stats = engine.stats()
    assert (stats.clips_encoded, stats.clips_reused, stats.images_encoded) == (1, 7, 0)
    assert sum(d.cached_tokens >= WINDOW_TOKENS for d in done) == 7  # the clip's KV was copied, not decoded
    assert engine.submit(about(clip, "Once more?", "wav", max_tokens=2)).result(120).error is None
    assert engine.stats().clips_encoded == 1  # kept: asked again later, still not encoded again
    assert_kv_accounted(engine)


def test_eight_panes_prefill_the_clip_once_and_the_others_copy_all_of_it(hearing):
    """The clip's 150 rows are decoded in pieces of 48 (prefill_chunk): the first pane ends 6 rows short of the
    clip before its last piece. Its followers wait for that piece and copy the whole clip; they used to copy what
    was there and each decode the last 6 rows itself, one pane a step."""
    engine = hearing(n_slots=8)
    clip = encode(sample_clip(1))
    done = [h.result(300) for h in [engine.submit(about(clip, q, max_tokens=2)) for q in QUESTIONS]]
    assert all(d.error is None and d.generated_tokens > 0 for d in done)
    stats = engine.stats()
    assert (stats.clips_encoded, stats.clip_rows_prefilled) == (1, WINDOW_TOKENS)
    assert stats.prompt_tokens_total == sum(d.prompt_tokens - d.cached_tokens for d in done)
    assert_kv_accounted(engine)


def test_a_clip_heard_before_is_not_read_again_and_tokenises_as_libmtmd_does(model_path, monkeypatch):
    """libmtmd computes a clip's spectrogram whenever a prompt holding it is tokenised (40-70 ms for 10 s of it):
    a prompt whose clips were all tokenised before is put together from what was kept, to the same tokens."""
    from app.engine.native import LlamaModel
    from app.engine.vision import projector
    from app.engine.vision.media import split_images

    def text(words):
        return {"type": "text", "text": words}

    def tokens(store, parts):  # placeholders named (clip window, row): two stores number their clips apart
        messages, clips = split_images([{"role": "user", "content": list(parts)}])
        prompt = f"<|im_start|>user\n{messages[0]['content']}<|im_end|>\n<|im_start|>assistant\n"
        named = [(store.entry(projector.image_of(t)[0]).key, projector.image_of(t)[1]) if t < 0 else t
                 for t in store.tokenize(prompt, clips, set())]
        assert sum(isinstance(t, tuple) for t in named) >= WINDOW_TOKENS * len(clips)
        return named

    model = LlamaModel(model_path)
    heard, fresh = (projector.ImageStore(model, tiny_audio_mmproj(), 2) for _ in range(2))
    try:
        tone, noise, long = (audio_part(encode(sample_clip(k, seconds))) for k, seconds in ((0, 1), (1, 1), (3, 31)))
        for parts in ((tone, text("What is it?")), (text("Hear"), noise), (long, text("?"))):
            tokens(heard, parts)  # libmtmd reads each clip once
        later = [(tone, text("And now?")), (text("Both:"), noise, text("then"), tone),
                 (text("A long one"), long, text("and a short one"), noise, text("."))]
        expected = [tokens(fresh, parts) for parts in later]  # libmtmd's tokens for them
        monkeypatch.setattr(projector.audio, "decode_clip", lambda *a, **k: pytest.fail("a clip was read again"))
        assert [tokens(heard, parts) for parts in later] == expected
    finally:
        heard.close()
        fresh.close()
        model.close()


def test_a_clip_longer_than_a_window_is_two_windows_each_encoded_once(hearing):
    engine = hearing(n_slots=2)
    clip = encode(sample_clip(3, seconds=31.0))
    first = engine.submit(about(clip, "What is this?", max_tokens=2)).result(300)
    assert first.error is None and first.prompt_tokens > 2 * WINDOW_TOKENS
    assert engine.stats().clips_encoded == 2
    engine.clear_prompt_cache()
    again = engine.submit(about(clip, "And now?", max_tokens=2)).result(300)
    assert again.error is None and engine.stats().clips_encoded == 2  # both windows kept, by "<sha256>#<window>"


@pytest.mark.parametrize("reproducible", [False, True])
def test_the_same_request_gives_the_same_tokens_alone_and_in_a_batch(hearing, reproducible):
    engine = hearing(n_slots=4, reproducible=reproducible)
    target = about(encode(sample_clip(2), "flac"), "Describe it.", "flac", max_tokens=12, audio_first=False)
    others = [about(encode(sample_clip(0)), "Transcribe it.", max_tokens=16),
              about(encode(sample_clip(1)), "Is it speech?"),
              GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=16,
                                sampling=GREEDY)]
    assert_same_alone_and_batched(engine, target, others)


def test_a_model_that_cannot_hear_refuses_a_clip_without_quoting_it(make_engine):
    clip = encode(sample_clip(0))
    quoted = base64.b64encode(clip).decode()[:40]
    plain = make_engine(n_slots=1)
    done = plain.submit(about(clip, "What is this?")).result(60)
    assert done.finish_reason == "error" and done.error_kind == "prompt"
    assert "without an audio projector (mmproj), so it cannot hear" in done.error and quoted not in done.error
    seeing = make_engine(n_slots=1, mmproj=str(tiny_mmproj()))
    done = seeing.submit(about(clip, "What is this?")).result(60)
    assert done.error_kind == "prompt" and "has no audio encoder" in done.error and quoted not in done.error
    unknown = GenerationRequest(messages=[{"role": "user", "content": [
        {"type": "input_file", "input_file": {"file_data": quoted * 3}}, {"type": "text", "text": "?"}]}],
        max_tokens=2, sampling=GREEDY)
    done = plain.submit(unknown).result(60)  # the chat template's refusal names the type, not the data
    assert done.error_kind == "prompt" and "'input_file'" in done.error and quoted not in done.error
    assert plain.submit(GenerationRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=2,
                                          sampling=GREEDY)).result(60).error is None


def test_a_clip_that_cannot_be_decoded_is_named_by_file_and_part(hearing):
    engine = hearing(n_slots=1)
    garbage = audio_part(b"not a sound at all" * 20, "mp3")
    garbage["name"] = "birdsong.mp3"
    request = GenerationRequest(messages=[{"role": "user", "content": [{"type": "text", "text": "Hear:"}, garbage]}],
                                max_tokens=4, sampling=GREEDY)
    done = engine.submit(request).result(60)
    assert done.finish_reason == "error" and done.error_kind == "prompt"
    assert "message 1, part 2 (birdsong.mp3)" in done.error and "cannot be decoded" in done.error
    assert garbage["input_audio"]["data"][:40] not in done.error
    assert engine.submit(about(encode(sample_clip(0)), "And this one?", max_tokens=2)).result(60).error is None


def test_a_clip_that_does_not_fit_the_slot_says_the_sizes(hearing):
    engine = hearing(n_slots=1, n_ctx_per_slot=128)
    done = engine.submit(about(encode(sample_clip(0)), "What is this?")).result(60)
    assert done.error_kind == "context"
    assert f"{WINDOW_TOKENS} of them for 1 audio clip," in done.error and "a slot holds 128" in done.error


def test_a_clip_is_decoded_off_the_engine_thread(hearing, monkeypatch):
    engine = hearing(n_slots=2)
    threads, real = [], miniaudio.decode

    def watched(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    clip = encode(sample_clip(3))
    monkeypatch.setattr(miniaudio, "decode", watched)
    done = [h.result(120) for h in [engine.submit(about(clip, q, max_tokens=2)) for q in QUESTIONS[:2]]]
    assert all(d.error is None for d in done) and threads and "chorus-engine" not in threads
    assert len(threads) == 1  # two panes on one clip: decoded once
