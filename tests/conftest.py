"""Shared fixtures. Qt runs offscreen; every engine test uses the real embedded SmolLM2 model."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams  # noqa: E402
from app.models import default_model_path  # noqa: E402

GREEDY = SamplingParams(temperature=0.0)


@pytest.fixture(scope="session")
def model_path():
    return default_model_path()


@pytest.fixture
def make_engine(model_path):
    """Build engines with overrides; all are closed at the end of the test."""
    engines = []

    def make(**overrides):
        overrides.setdefault("n_threads", 2)
        engine = Engine(EngineConfig(model_path=model_path, **overrides))
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()


def ask(text: str, max_tokens: int = 32, **kwargs) -> GenerationRequest:
    kwargs.setdefault("sampling", GREEDY)
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=max_tokens, **kwargs)


def assert_kv_accounted(engine) -> None:
    """No slot or KV leaked: once idle, every slot's KV is what the engine's records say (a running sequence or
    the prompt cache), and clearing the cache empties them all."""
    assert engine.wait_idle(30)
    assert engine.kv_positions() == engine.kv_expected()
    engine.clear_prompt_cache()
    assert engine.wait_idle(30)
    assert engine.kv_positions() == [0] * engine.config.n_slots
