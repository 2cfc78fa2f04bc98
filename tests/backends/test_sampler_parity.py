"""The samplers' oracle: for each sampler, a seeded request gives token for token what llama-server (built from the
llama.cpp that llama-cpp-python vendors) gives for the same prompt, seed and settings on its /completion endpoint.

Raw prompts (no chat template in between), temperature > 0, every setting away from its default. The prompt
repeats itself so that DRY and the repetition penalties have something to punish (both must see the prompt, as
llama-server's do). With mirostat, llama-server applies neither the penalties nor the truncation samplers. One
llama-server and one engine serve every case, one request at a time (one slot each: the same batches, so the same
logits)."""

import dataclasses

import httpx
import pytest

from app.backends import OpenAIBackend
from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams
from tests.conftest import TEST_THREADS
from tests.fixtures.servers import llama_server

pytestmark = pytest.mark.servers

PROMPT = "The list: red, green, blue, red, green, blue, red, green, blue, red, green,"
N = 32
BASE = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0)  # nothing truncates unless the case says so
CASES = {
    "default chain": dict(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05),
    "penalties": dict(repeat_penalty=1.3, frequency_penalty=0.4, presence_penalty=0.3, penalty_last_n=32),
    "dry": dict(dry_multiplier=1.2, dry_base=1.5, dry_allowed_length=1, dry_penalty_last_n=48),
    "dry breakers": dict(dry_multiplier=1.2, dry_allowed_length=1, dry_sequence_breakers=(",", " blue")),
    "xtc": dict(xtc_probability=0.6, xtc_threshold=0.05),
    "typical-p": dict(typical_p=0.4),
    "mirostat 1": dict(mirostat=1, mirostat_tau=3.0, mirostat_eta=0.2),
    "mirostat 2": dict(mirostat=2, mirostat_tau=3.0, mirostat_eta=0.2),
    "mirostat over penalties": dict(mirostat=2, repeat_penalty=1.3, dry_multiplier=1.2, top_k=5),  # unapplied
    "top-n-sigma": dict(top_n_sigma=0.7),
    "dynamic temperature": dict(dynatemp_range=0.7, dynatemp_exponent=1.5),
    "all together": dict(top_k=40, top_p=0.9, min_p=0.02, repeat_penalty=1.1, dry_multiplier=0.8,
                         xtc_probability=0.3, xtc_threshold=0.08, typical_p=0.9, top_n_sigma=2.0,
                         dynatemp_range=0.3),
}
# SamplingParams field -> llama-server request field, where they differ.
SERVER_NAME = {"penalty_last_n": "repeat_last_n"}


@pytest.fixture(scope="module")
def server(model_path):
    started = llama_server(model_path).start()
    yield started
    started.kill()


@pytest.fixture(scope="module")
def engine(model_path):
    with Engine(EngineConfig(model_path=model_path, n_slots=1, n_ctx_per_slot=1024, n_threads=TEST_THREADS)) as e:
        yield e


def server_tokens(server, sampling: SamplingParams) -> tuple[list[int], str]:
    body = {SERVER_NAME.get(name, name): value for name, value in dataclasses.asdict(sampling).items()}
    body.update(prompt=PROMPT, n_predict=N, ignore_eos=True, return_tokens=True, cache_prompt=False)
    reply = httpx.post(server.url.removesuffix("/v1") + "/completion", json=body, timeout=120).json()
    return reply["tokens"], reply["content"]


@pytest.mark.parametrize("seed", [3, 1234])
@pytest.mark.parametrize("case", list(CASES))
def test_seeded_tokens_are_llama_servers(server, engine, case, seed):
    sampling = SamplingParams(**{**BASE, **CASES[case], "seed": seed})
    theirs, their_text = server_tokens(server, sampling)
    ours = engine.submit(GenerationRequest(prompt=PROMPT, sampling=sampling, max_tokens=N,
                                           ignore_eos=True)).result(timeout=120)
    assert len(theirs) == N
    if case != "default chain":  # the server applied the setting: without it, it samples another text
        assert server_tokens(server, SamplingParams(**BASE, seed=seed))[0] != theirs
    assert ours.token_ids == theirs
    assert ours.text == their_text


@pytest.mark.parametrize("case", [c for c in CASES if c != "default chain"])
def test_the_openai_backend_sends_each_sampler_under_llama_servers_name(server, engine, case):
    """The same oracle through OpenAIBackend (/v1/completions): what Chorus sends a server is what it means."""
    request = GenerationRequest(prompt=PROMPT, sampling=SamplingParams(**{**BASE, **CASES[case], "seed": 7}),
                                max_tokens=N, ignore_eos=True)
    backend = OpenAIBackend(server.url, max_concurrency=1)
    try:
        assert backend.list_models() and backend.server_kind == "llamacpp"
        theirs = backend.submit(request).result(timeout=120)
    finally:
        backend.close()
    ours = engine.submit(request).result(timeout=120)
    assert theirs.finish_reason == "length" and theirs.text == ours.text
    assert theirs.note == ""  # llama-server applies every one of them
