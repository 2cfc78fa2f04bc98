"""The audio oracle: greedy replies from the engine and from llama-server `--mmproj`, on the same two files
(SmolLM2-135M and the tiny random Ultravox projector of tests/fixtures/audio_gguf.py), are the same for 3 clips x 2
prompts (a tone as wav, noise as flac, a chirp as ogg), with as many prompt tokens in both. llama-server does not
read ogg: it gets the samples the engine decoded from the ogg file, as a float wav (lossless), so the chirp still
checks the encoder and the decode rather than the two vorbis decoders.

Plus the figures of docs/benchmarks.md, "Audio", printed, never asserted (timing): 8 requests about one clip, the
last one's time to first token over a lone request's, for the engine and for llama-server, and the engine's encodes
(llama-server's are not in its log).
"""

import base64
import io

import httpx
import pytest

from app.engine import GenerationRequest
from app.engine.vision.audio import decode_clip
from tests.conftest import GREEDY
from tests.fixtures.audio_gguf import RATE, audio_part, encode, sample_clip, tiny_audio_mmproj
from tests.fixtures.fan_out import engine_figures, server_figures
from tests.fixtures.vision_oracle import pair_fixtures

pytestmark = pytest.mark.servers

PROMPTS = [("text first", "What do you hear?"), ("audio first", "Describe this sound in one sentence.")]
CLIPS = [(0, "wav"), (1, "flac"), (2, "ogg")]
N = 24


def float_wav(data: bytes, fmt: str) -> bytes:
    """The clip's samples as the engine hears them (miniaudio at the projector's rate), as a float32 wav."""
    import soundfile

    out = io.BytesIO()
    soundfile.write(out, decode_clip(data, RATE, "the clip", fmt), RATE, format="WAV", subtype="FLOAT")
    return out.getvalue()


def messages(part: dict, order: str, question: str) -> list[dict]:
    parts = [{"type": "text", "text": question}, part]
    return [{"role": "user", "content": parts if order == "text first" else parts[::-1]}]


def tiny_pair():
    """The embedded model and the tiny Ultravox projector."""
    from app.models import default_model_path

    return default_model_path(), tiny_audio_mmproj()


server, engine = pair_fixtures(tiny_pair)  # llama-server with -ub as the engine's pieces, no prompt cache


def server_reply(server, msgs: list[dict], max_tokens: int = N) -> httpx.Response:
    body = {"messages": msgs, "max_tokens": max_tokens, "temperature": 0, "cache_prompt": False}
    return httpx.post(f"{server.url}/chat/completions", json=body, timeout=300)


@pytest.mark.parametrize("order,question", PROMPTS, ids=[p[0] for p in PROMPTS])
@pytest.mark.parametrize("k,fmt", CLIPS, ids=[c[1] for c in CLIPS])
def test_greedy_replies_about_a_clip_match_llama_server(server, engine, k, fmt, order, question):
    data = encode(sample_clip(k, seconds=2.0), fmt)
    ours = engine.submit(GenerationRequest(messages=messages(audio_part(data, fmt), order, question), max_tokens=N,
                                           sampling=GREEDY)).result(300)
    theirs_part = audio_part(float_wav(data, fmt), "wav") if fmt == "ogg" else audio_part(data, fmt)
    reply = server_reply(server, messages(theirs_part, order, question))
    assert reply.status_code == 200, reply.text
    theirs = reply.json()
    assert ours.error is None
    assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]


def test_a_server_without_audio_refuses_a_clip_naming_the_server(start_llama_server):
    """llama-server without an audio projector answers a clip with an error; the backend's message names it."""
    from app.backends import OpenAIBackend

    backend = OpenAIBackend.open(start_llama_server().url)
    try:
        clip = encode(sample_clip(0))
        done = backend.submit(GenerationRequest(messages=messages(audio_part(clip), "audio first", "Hm?"),
                                                max_tokens=4, sampling=GREEDY)).result(120)
    finally:
        backend.close()
    assert done.finish_reason == "error"
    assert done.error.startswith(f"{backend.name} refused the audio clip in this message"), done.error
    assert "audio" in done.error.split("in this message", 1)[1]  # llama-server's own words
    assert base64.b64encode(clip).decode()[:40] not in done.error


def test_eight_requests_on_one_clip_figures(model_path):
    """Printed: the last of 8 requests' TTFT over one request's, engine and llama-server, and the encodes."""
    questions = ["What is this sound?", "Transcribe it.", "Is it speech?", "How loud is it?",
                 "What instrument?", "Describe it.", "How long is it?", "Give it a title."]
    clip, other = encode(sample_clip(2, seconds=10.0)), encode(sample_clip(0, seconds=10.0))
    reqs = [messages(audio_part(clip), "audio first", q) for q in questions]
    alone = messages(audio_part(other), "audio first", questions[0])  # another clip: cold too
    one, last, encoded = engine_figures(model_path, tiny_audio_mmproj(), alone, reqs, lambda stats: stats.clips_encoded)
    print(f"\nengine: one pane TTFT {one * 1000:.0f} ms, last of 8 {last * 1000:.0f} ms, ratio {last / one:.2f}, "
          f"clips encoded {encoded}")
    assert encoded == 1
    one, last = server_figures(model_path, tiny_audio_mmproj(), alone, reqs)
    print(f"llama-server -np 8: one request TTFT {one * 1000:.0f} ms, last of 8 {last * 1000:.0f} ms, "
          f"ratio {last / one:.2f}")
