"""The Backend protocol is the only way in: what differs between a local model and a server is declared
on the protocol, each kind answers it (or says plainly that it cannot), and request ids come from one counter
whichever backend makes them. On the real model; the server is an OpenAIBackend whose URL answers nothing, which
is enough for everything here that does not generate."""

from __future__ import annotations

import pytest

from app.backends import Backend, LocalBackend, NotSupported, OpenAIBackend
from app.backends.registry import MAIN, BackendRegistry
from app.engine import EngineConfig, GenerationRequest
from app.session import PaneSpec, SessionController, SessionModel, SessionRunner
from tests.conftest import TEST_THREADS

DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens


@pytest.fixture
def local(model_path):
    backend = LocalBackend(EngineConfig(model_path=model_path, n_slots=2, n_ctx_per_slot=256,
                                        n_threads=TEST_THREADS))
    yield backend
    backend.close()


@pytest.fixture
def server():
    backend = OpenAIBackend(DEAD_URL, model="m", max_concurrency=2)
    yield backend
    backend.close()


def test_both_kinds_declare_every_capability(local, server):
    request = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
    for backend in (local, server):
        assert isinstance(backend, Backend)
        backend.reset_stats()
        assert backend.check_format('root ::= "a"', None) is None
        assert backend.check_format("   ", None) == "the grammar is empty"  # no model needed to say so
    assert local.config.n_slots == 2 and server.config is None
    assert "Hi" in local.render_prompt(request)
    with pytest.raises(NotSupported, match="127.0.0.1:9/v1 renders prompts on the server"):
        server.render_prompt(request)
    assert "root" in local.check_format('answer ::= "a"', None)  # the model's own parser: no root rule
    with pytest.raises(NotSupported, match="127.0.0.1:9/v1 keeps its prompt cache on the server"):
        server.clear_prompt_cache()


def test_a_cleared_prompt_cache_makes_the_next_request_start_cold(local):
    request = GenerationRequest(prompt="The quick brown fox jumps over the lazy dog. " * 4, max_tokens=1)
    assert local.submit(request).result(timeout=60).cached_tokens == 0
    assert local.submit(request).result(timeout=60).cached_tokens > 0  # its prompt came from a slot's cache
    local.clear_prompt_cache()
    assert local.wait_idle(30)
    assert local.submit(request).result(timeout=60).cached_tokens == 0


def test_a_servers_prompt_as_seen_says_it_is_rendered_out_of_sight(server):
    registry = BackendRegistry(lambda event: None)
    registry.set_main(server)
    controller = SessionController(SessionModel(), SessionRunner(registry))
    with pytest.raises(ValueError, match="renders prompts on the server, out of Chorus's sight"):
        controller.prompt_as_seen(PaneSpec(draft="Hello", backend=MAIN))


def test_request_ids_are_one_sequence_across_engines_and_servers(local, server, model_path):
    """Before: an engine counted from 1 and a server from 10^9, unique only while no engine passed 10^9."""
    other = LocalBackend(EngineConfig(model_path=model_path, n_slots=1, n_ctx_per_slot=256, n_threads=TEST_THREADS))
    try:
        request = GenerationRequest(prompt="Hi", max_tokens=1)
        handles = [backend.submit(request) for backend in (local, server, other, server, local, other)]
        ids = [handle.id for handle in handles]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)  # drawn in submit order from one counter
        for handle in handles:
            handle.cancel()
            assert handle.result(timeout=60).finish_reason in ("cancelled", "error", "length")
    finally:
        other.close()
