"""The M-RoPE vision oracle (issue 37): greedy replies from the engine and from llama-server `--mmproj` on the same
two files, the tiny Qwen2-VL-style pair of tests/vision_qwen2vl.py (SmolLM2's weights as `qwen2vl`, a random
`qwen2vl_merger` projector), are the same for 2 images x 2 prompts, and the prompt has the same number of tokens.
The images are not square (8 x 4 and 3 x 7 tokens), so rows and columns take different M-RoPE positions, and the
text after an image starts max(nx, ny) positions after it, not nx * ny. One request at a time on each.
"""

import httpx
import pytest

from app.engine import Engine, EngineConfig, GenerationRequest, limits
from tests.conftest import GREEDY, TEST_THREADS
from tests.servers import llama_server
from tests.vision_gguf import data_url, sample_png
from tests.vision_qwen2vl import tiny_qwen2vl

pytestmark = pytest.mark.servers

IMAGES = {"wide": sample_png(0, 64, 32), "tall": sample_png(2, 24, 56)}
PROMPTS = [("text first", "What is in this image?"), ("image first", "Describe it in one sentence.")]
N = 24


def messages(png: bytes, order: str, question: str) -> list[dict]:
    parts = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": data_url(png)}}]
    return [{"role": "user", "content": parts if order == "text first" else parts[::-1]}]


@pytest.fixture(scope="module")
def pair():
    return tiny_qwen2vl()


@pytest.fixture(scope="module")
def server(pair):
    model, mmproj = pair
    # -ub as in test_vision_server.py: the server's ubatches are the engine's prompt pieces, so every token meets
    # the same attention kernel in both
    started = llama_server(model, "--mmproj", str(mmproj), "-ub", str(limits.PREFILL_CHUNK),
                           "--no-cache-prompt").start()
    yield started
    started.kill()


@pytest.fixture(scope="module")
def engine(pair):
    model, mmproj = pair
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=4, n_threads=TEST_THREADS)) as started:
        yield started


@pytest.mark.parametrize("order,question", PROMPTS, ids=[p[0] for p in PROMPTS])
@pytest.mark.parametrize("image", sorted(IMAGES))
def test_greedy_replies_about_an_mrope_image_match_llama_server(server, engine, image, order, question):
    msgs = messages(IMAGES[image], order, question)
    ours = engine.submit(GenerationRequest(messages=msgs, max_tokens=N, sampling=GREEDY)).result(300)
    body = {"messages": msgs, "max_tokens": N, "temperature": 0, "cache_prompt": False}
    reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    theirs = reply.json()
    assert ours.error is None
    assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]
