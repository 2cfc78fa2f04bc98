"""Video in the engine: SmolLM2-135M with the tiny random vision projector of tests/fixtures/vision_gguf.py.

A video is its frames at the request's rate (PyAV), each an image through libmtmd, with llama-server's "Video:"
and timestamp texts between them. Checked here: the frames and texts a video becomes, each distinct frame encoded
once however many panes (or rates) ask about it, the frame budget, the same tokens alone or in a batch, and the
refusals. Token parity with llama-server --mmproj --video-fps is in tests/backends/test_video_server.py.
"""

import base64
import functools
import threading

import av
import pytest

from app.engine import GenerationRequest
from app.engine.vision.media import MARKER
from app.engine.vision.video import decode_video
from tests.conftest import GREEDY, ask, assert_kv_accounted, assert_same_alone_and_batched
from tests.fixtures.video_files import about, sample_video, video_part
from tests.fixtures.vision_gguf import IMAGE_TOKENS, tiny_mmproj

QUESTIONS = ["What happens?", "Describe the video.", "What moves?", "What colour is it?",
             "Is it fast?", "Give it a title.", "How long is it?", "Where does it go?"]


@pytest.fixture
def watching(make_engine):
    """Engines on the embedded model with the tiny vision projector."""
    return functools.partial(make_engine, mmproj=str(tiny_mmproj()))


def test_a_video_is_its_frames_at_the_rate_with_llama_servers_texts(watching):
    engine = watching(n_slots=2)
    video = sample_video(0, seconds=2.0, rate=8)
    request = about(video, "What happens?")
    assert f"<|im_start|>user\n{MARKER}What happens?<|im_end|>" in engine.render_prompt(request)
    done = engine.submit(request).result(300)
    assert done.error is None and done.generated_tokens > 0
    plain = engine.submit(GenerationRequest(messages=[{"role": "user", "content": "What happens?"}],
                                            max_tokens=1, sampling=GREEDY)).result(60)
    texts = [*engine._model.tokenize("Video:", add_special=False),
             *engine._model.tokenize("[0m0.00s]", add_special=False)]
    assert done.prompt_tokens == plain.prompt_tokens + len(texts) + 8 * IMAGE_TOKENS  # 2 s at 4 fps
    stats = engine.stats()
    assert (stats.frames_encoded, stats.images_encoded) == (8, 0)
    native = engine.submit(about(video, "And every frame?", video_fps=0)).result(300)  # its own 8 fps: 16 frames
    assert native.error is None and native.prompt_tokens > done.prompt_tokens + 7 * IMAGE_TOKENS
    assert engine.stats().frames_encoded == 16  # the 8 frames 4 fps took (0, 2, 4, ...) were not encoded again
    budget = engine.submit(about(video, "What happens?", video_max_frames=3)).result(300)
    assert budget.error is None and budget.prompt_tokens == done.prompt_tokens - 5 * IMAGE_TOKENS
    assert_kv_accounted(engine)


def test_the_frame_budget_spreads_frames_over_the_whole_video():
    video = decode_video(sample_video(1, seconds=4.0, rate=8), 4.0, 5, "the video")
    assert len(video.frames) == 5 and video.fps == pytest.approx(1.25)
    items = video.items()
    assert items[:3] == ["Video:", video.frames[0], "[0m0.00s]"] and "[0m4.80s]" not in items
    assert items.count("[0m0.00s]") == 1 and len([i for i in items if isinstance(i, str)]) == 2  # < 5 s of frames


def test_eight_panes_on_one_video_encode_each_frame_once(watching):
    engine = watching(n_slots=8)
    video = sample_video(2, seconds=1.0, rate=8)  # 4 frames at 4 fps
    done = [h.result(300) for h in [engine.submit(about(video, q, max_tokens=4)) for q in QUESTIONS]]
    assert all(d.error is None and d.generated_tokens > 0 for d in done)
    stats = engine.stats()
    assert (stats.frames_encoded, stats.frames_reused, stats.images_encoded) == (4, 28, 0)
    assert sum(d.cached_tokens >= 4 * IMAGE_TOKENS for d in done) == 7  # the frames' KV was copied, not decoded
    assert_kv_accounted(engine)


@pytest.mark.parametrize("reproducible", [False, True])
def test_the_same_request_gives_the_same_tokens_alone_and_in_a_batch(watching, reproducible):
    engine = watching(n_slots=4, reproducible=reproducible)
    target = about(sample_video(0, seconds=1.0), "Describe the video.", max_tokens=12, video_first=False)
    others = [about(sample_video(1, seconds=1.0), "What moves?", max_tokens=16),
              about(sample_video(2, seconds=1.0), "Is it fast?", video_fps=2.0),
              GenerationRequest(messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=16,
                                sampling=GREEDY)]
    assert_same_alone_and_batched(engine, target, others)


def test_videos_the_engine_cannot_take_are_refused_without_quoting_them(make_engine, watching):
    video = sample_video(0, seconds=0.5)
    quoted = base64.b64encode(video).decode()[:40]
    plain = make_engine(n_slots=1)
    done = plain.submit(about(video, "What is this?")).result(60)
    assert done.finish_reason == "error" and done.error_kind == "prompt"
    assert "without a vision projector (mmproj), so it cannot watch a video" in done.error and quoted not in done.error

    engine = watching(n_slots=1, n_ctx_per_slot=256)
    garbage = video_part(b"not a film at all" * 40)
    garbage["name"] = "holiday.mp4"
    request = GenerationRequest(messages=[{"role": "user", "content": [{"type": "text", "text": "See:"}, garbage]}],
                                max_tokens=4, sampling=GREEDY)
    done = engine.submit(request).result(60)
    assert done.finish_reason == "error" and done.error_kind == "prompt"
    assert "message 1, part 2 (holiday.mp4): the video cannot be decoded" in done.error
    assert garbage["video_url"]["url"][30:70] not in done.error

    done = engine.submit(about(sample_video(1, seconds=2.0), "What is this?")).result(60)  # 8 x 64 tokens > 256
    assert done.error_kind == "context" and "a slot holds 256" in done.error
    assert "of them for 1 video (8 frames at 4 fps)," in done.error and "frame budget" in done.error
    assert engine.submit(about(video, "And this one?", max_tokens=2)).result(60).error is None


class HeldDecode:
    """PyAV's open held until `release()` (as a long high-resolution video holds it), and the threads it ran on;
    videos made before `hold` are made with the real one."""

    def __init__(self, monkeypatch):
        self.decoding, self.held, self.threads = threading.Event(), threading.Event(), []
        self._real, self._monkeypatch = av.open, monkeypatch

    def hold(self):
        def held_open(*args, **kwargs):
            self.threads.append(threading.current_thread().name)
            self.decoding.set()
            self.held.wait(30)
            return self._real(*args, **kwargs)

        self._monkeypatch.setattr(av, "open", held_open)

    def release(self):
        self.held.set()
        self._monkeypatch.setattr(av, "open", self._real)


def test_a_video_is_decoded_off_the_engine_thread_while_other_panes_go_on(watching, monkeypatch):
    """PyAV decodes a video before its request queues, on a thread of its own: held in its decode here, it keeps
    no other pane from running to its end."""
    engine, held, clip = watching(n_slots=2), HeldDecode(monkeypatch), sample_video(0, seconds=1.0)
    held.hold()
    video = engine.submit(about(clip, "What happens?"))
    assert held.decoding.wait(60)
    text = engine.submit(ask("Hi", max_tokens=4)).result(60)
    finished_while_held = not held.held.is_set() and not video.done()
    held.release()
    watched = video.result(300)
    assert text.error is None and watched.error is None and watched.generated_tokens > 0
    assert "chorus-engine" not in held.threads and finished_while_held
    assert engine.stats().frames_encoded == 4


def test_a_request_cancelled_while_its_video_is_read_ends_at_once_and_never_queues(watching, monkeypatch):
    engine, held, clip = watching(n_slots=1), HeldDecode(monkeypatch), sample_video(1, seconds=0.5)
    held.hold()
    video = engine.submit(about(clip, "What happens?"))
    assert held.decoding.wait(60)
    video.cancel()
    done = video.result(60)
    assert (done.finish_reason, done.generated_tokens) == ("cancelled", 0) and not held.held.is_set()
    assert engine.wait_idle(60) and engine.stats().queued == 0
    held.release()
    again = engine.submit(about(clip, "What happens?", max_tokens=2)).result(300)
    assert again.error is None and engine.stats().frames_encoded == 2
