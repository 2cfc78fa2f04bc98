"""The LoRA oracle: greedy tokens identical to llama-server's `--lora A --lora B` with the same per-request
scales (`lora: [{id, scale}]`, adapters not listed at scale 0), for the base model, each adapter, half an
adapter and both at once. Random adapters for SmolLM2 (tests/fixtures/lora_adapter.py); one request at a time on each
side, raw prompts on /completion (no chat template in between).

The engine runs one slot without reproducible mode, so that a lone decode token is a one-row llama_decode as on
the server: reproducible mode pads it with a placeholder row, and with F32 adapter tensors a two-row product takes
another matmul kernel than a one-row one, so its tokens may part from the server's after a dozen or so (they stay
the same whatever else runs, which is what that mode promises; tests/engine/test_lora.py)."""

import httpx
import pytest

from app.engine import Engine, EngineConfig, GenerationRequest, LoraAdapter
from tests.conftest import GREEDY, TEST_THREADS
from tests.fixtures.lora_adapter import write_lora
from tests.fixtures.servers import llama_server

pytestmark = pytest.mark.servers

PROMPT = "The sea is"
N = 32
CASES = {"base": {}, "a": {0: 1.0}, "a x 0.5": {0: 0.5}, "b": {1: 1.0}, "a x 0.5 + b x 0.7": {0: 0.5, 1: 0.7},
         "a x -0.8": {0: -0.8}}


@pytest.fixture(scope="module")
def adapters(model_path, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lora")
    return [write_lora(model_path, folder / "a.gguf", seed=0), write_lora(model_path, folder / "b.gguf", seed=1)]


@pytest.fixture(scope="module")
def server(model_path, adapters):
    started = llama_server(model_path, *[arg for path in adapters for arg in ("--lora", str(path))]).start()
    yield started
    started.kill()


@pytest.fixture(scope="module")
def engine(model_path):
    with Engine(EngineConfig(model_path=model_path, n_slots=1, n_ctx_per_slot=512, n_threads=TEST_THREADS,
                             reproducible=False)) as e:  # lone decode tokens, as the server decodes them
        yield e


def server_tokens(server, scales: dict[int, float]) -> list[int]:
    body = dict(prompt=PROMPT, n_predict=N, ignore_eos=True, temperature=0.0, return_tokens=True,
                cache_prompt=False, lora=[{"id": i, "scale": scales.get(i, 0.0)} for i in range(2)])
    reply = httpx.post(server.url.removesuffix("/v1") + "/completion", json=body, timeout=120)
    reply.raise_for_status()
    return reply.json()["tokens"]


@pytest.mark.parametrize("case", list(CASES))
def test_greedy_tokens_are_llama_servers_at_the_same_scales(server, engine, adapters, case):
    scales = CASES[case]
    lora = tuple(LoraAdapter(str(adapters[i]), scale) for i, scale in scales.items())
    ours = engine.submit(GenerationRequest(prompt=PROMPT, sampling=GREEDY, max_tokens=N, ignore_eos=True,
                                           lora=lora)).result(timeout=120)
    theirs = server_tokens(server, scales)
    assert len(theirs) == N
    if scales:  # the adapter took effect on the server: its tokens are not the base model's
        assert theirs != server_tokens(server, {})
    assert ours.token_ids == theirs
