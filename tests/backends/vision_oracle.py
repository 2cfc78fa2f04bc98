"""The vision oracle's shared parts: the prompts, the messages, the pair's fixtures (llama-server
`--mmproj` started as the engine cuts its prompt pieces, and an engine on the same two files), and the comparison
of one greedy reply from each. Used by the M-RoPE and the non-causal server tests
(tests/backends/test_vision_mrope_server.py, test_vision_noncausal_server.py)."""

import httpx
import pytest

from app.engine import Completion, Engine, EngineConfig, GenerationRequest, limits
from tests.conftest import GREEDY, TEST_THREADS
from tests.servers import llama_server
from tests.vision_gguf import data_url

PROMPTS = [("text first", "What is in this image?"), ("image first", "Describe it in one sentence.")]
N = 24  # tokens a reply


def messages(png: bytes, order: str, question: str) -> list[dict]:
    """One user message: the question and the image, in `order`."""
    parts = [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": data_url(png)}}]
    return [{"role": "user", "content": parts if order == "text first" else parts[::-1]}]


def start_server(model, mmproj):
    """llama-server on the pair, prompt cache off. -ub as in test_vision_server.py: the server's ubatches are the
    engine's prompt pieces, so every token meets the same attention kernel in both."""
    return llama_server(model, "--mmproj", str(mmproj), "-ub", str(limits.PREFILL_CHUNK), "--no-cache-prompt").start()


def pair_fixtures(build):
    """Module fixtures `server` and `engine` (4 slots) on the pair `build()` returns (text model, projector):
    assign them in the test module, `server, engine = pair_fixtures(tiny_x)`."""

    @pytest.fixture(scope="module")
    def server():
        started = start_server(*build())
        yield started
        started.kill()

    @pytest.fixture(scope="module")
    def engine():
        model, mmproj = build()
        with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=4, n_threads=TEST_THREADS)) as started:
            yield started
    return server, engine


def replies(server, engine, msgs: list[dict], logprobs: int = 0) -> tuple[Completion, dict]:
    """The engine's greedy reply to `msgs` and llama-server's (its JSON), each of N tokens at most, with the
    `logprobs` most likely tokens at each position if asked."""
    ours = engine.submit(GenerationRequest(messages=msgs, max_tokens=N, sampling=GREEDY,
                                           logprobs=logprobs)).result(300)
    body = {"messages": msgs, "max_tokens": N, "temperature": 0, "cache_prompt": False}
    if logprobs:
        body |= {"logprobs": True, "top_logprobs": logprobs}
    reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=300)
    assert reply.status_code == 200, reply.text
    return ours, reply.json()


def assert_same_reply(server, engine, msgs: list[dict]) -> None:
    """The engine's greedy reply to `msgs` is llama-server's, over a prompt of as many tokens."""
    ours, theirs = replies(server, engine, msgs)
    assert_same_text(ours, theirs)


def assert_same_text(ours: Completion, theirs: dict) -> None:
    assert ours.error is None
    assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
    assert ours.text == theirs["choices"][0]["message"]["content"]
