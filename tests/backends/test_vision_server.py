"""The vision oracle: greedy replies from the engine and from llama-server `--mmproj`, on the same two
files (SmolLM2-135M and the tiny random projector of tests/fixtures/vision_gguf.py), are the same for 3 images x 2
prompts, and the prompt has the same number of tokens (text and image) in both. One request at a time on each.

Plus the figures of docs/benchmarks.md, "Images", printed, never asserted (timing): 8 requests about one image, the last
one's time to first token over a lone request's, for the engine and for llama-server.
"""

import httpx
import pytest

from app.engine import Engine, EngineConfig, GenerationRequest, limits
from tests.conftest import GREEDY, TEST_THREADS
from tests.fixtures.fan_out import engine_figures, server_figures
from tests.fixtures.servers import llama_server
from tests.fixtures.vision_gguf import data_url, sample_png, tiny_mmproj

pytestmark = pytest.mark.servers

PROMPTS = [("text first", "What is in this image?"), ("image first", "Describe it in one sentence.")]
N = 24


def messages(k: int, order: str, question: str) -> list[dict]:
    parts = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": data_url(sample_png(k))}}]
    return [{"role": "user", "content": parts if order == "text first" else parts[::-1]}]


@pytest.fixture(scope="module")
def server(model_path):
    # -ub: the server cuts its batches into ubatches of the engine's prompt piece, so every token meets the same
    # attention kernel in both (docs/engine.md, "Reproducible outputs"). With its default 512, the 64 image rows
    # go in one ubatch, ggml's tiled kernel: the same prompt's greedy replies drift apart after a few tokens on
    # this random projector (2 of the 3 images within 16 tokens, measured).
    started = llama_server(model_path, "--mmproj", str(tiny_mmproj()), "-ub", str(limits.PREFILL_CHUNK),
                           "--no-cache-prompt").start()
    yield started
    started.kill()


@pytest.fixture(scope="module")
def engine(model_path):
    with Engine(EngineConfig(model_path=model_path, mmproj=str(tiny_mmproj()), n_slots=4,
                             n_threads=TEST_THREADS)) as started:
        yield started


def server_reply(server, msgs: list[dict], max_tokens: int = N) -> dict:
    body = {"messages": msgs, "max_tokens": max_tokens, "temperature": 0, "cache_prompt": False}
    reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    return reply.json()


@pytest.mark.parametrize("order,question", PROMPTS, ids=[p[0] for p in PROMPTS])
@pytest.mark.parametrize("k", range(3))
def test_greedy_replies_about_an_image_match_llama_server(server, engine, k, order, question):
    msgs = messages(k, order, question)
    ours = engine.submit(GenerationRequest(messages=msgs, max_tokens=N, sampling=GREEDY)).result(300)
    theirs = server_reply(server, msgs)
    assert ours.error is None
    assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]


def test_eight_requests_on_one_image_figures(model_path):
    """Printed: the last of 8 requests' TTFT over one request's, engine and llama-server (-np 8 here)."""
    questions = ["What is in this image?", "Describe the colours.", "Is there any text?", "Count the shapes.",
                 "What is the mood?", "Where was it taken?", "Who made it?", "Give it a title."]
    png = sample_png(1)
    reqs = [[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(png)}},
                                          {"type": "text", "text": q}]}] for q in questions]
    alone = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(sample_png(0))}},
                                          {"type": "text", "text": questions[0]}]}]  # another image: cold too
    one, last, encoded = engine_figures(model_path, tiny_mmproj(), alone, reqs, lambda stats: stats.images_encoded)
    print(f"\nengine: one pane TTFT {one * 1000:.0f} ms, last of 8 {last * 1000:.0f} ms, ratio {last / one:.2f}, "
          f"images encoded {encoded}")
    assert encoded == 1
    one, last = server_figures(model_path, tiny_mmproj(), alone, reqs)
    print(f"llama-server -np 8: one request TTFT {one * 1000:.0f} ms, last of 8 {last * 1000:.0f} ms, "
          f"ratio {last / one:.2f}")
