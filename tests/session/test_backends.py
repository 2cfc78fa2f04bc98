"""BackendSpec (what is saved) and BackendRegistry (open backends by name) on the real model and real sockets."""

import socket
import threading

import pytest

from app.engine import GenerationRequest, SamplingParams
from app.session import BackendRegistry, BackendSpec
from tests.conftest import TEST_THREADS


def test_specs_say_what_is_wrong_in_one_sentence(tmp_path):
    assert "unknown backend kind" in BackendSpec(kind="cloud").problem()
    assert BackendSpec(kind="local").problem() == "choose a GGUF model file"
    assert BackendSpec(kind="local", path=str(tmp_path / "x.gguf")).problem().startswith("model file not found")
    assert "http://" in BackendSpec(kind="server", url="127.0.0.1:8080/v1").problem()
    assert "concurrent requests" in BackendSpec(kind="server", url="http://h/v1", max_concurrency=0).problem()
    assert BackendSpec(kind="server", url="https://gpu.example/v1").problem() is None


def test_names_are_short_and_round_trip():
    served = BackendSpec(kind="server", url="http://10.0.0.7:8080/v1", model="/models/qwen2.5-7b-q4.gguf")
    assert served.name == "10.0.0.7:8080 · qwen2.5-7b-q4.gguf"  # llama-server names a model by its path
    assert BackendSpec(kind="server", url="http://h:1/v1").name == "h:1 · default model"
    assert BackendSpec(kind="local", path="/m/SmolLM2.Q4_1.gguf").name == "local · SmolLM2.Q4_1"
    assert BackendSpec.from_dict(served.to_dict()) == served
    assert BackendSpec.from_dict({**served.to_dict(), "from_a_newer_version": 1}) == served  # unknown keys: ignored


@pytest.mark.parametrize("data", [["server"], {"kind": "ftp"}, {"kind": "local", "path": 3},
                                  {"kind": "server", "url": "http://h/v1", "max_concurrency": "8"},
                                  {"kind": "server", "url": "http://h/v1", "model": ["a"]}])
def test_a_hand_edited_spec_is_refused(data):
    with pytest.raises(ValueError, match="not a backend"):
        BackendSpec.from_dict(data)


def test_a_local_model_opens_once_runs_and_closes(model_path):
    events, done = [], threading.Event()

    def on_step(event):
        events.append(event)
        if event.finished:
            done.set()

    registry = BackendRegistry(on_step)
    spec = BackendSpec(kind="local", path=str(model_path))
    opened = registry.open(spec, engine={"n_slots": 1, "n_ctx_per_slot": 256, "n_threads": TEST_THREADS})
    try:
        assert opened == spec and registry.names() == [spec.name] and registry.specs() == [spec]
        with pytest.raises(ValueError, match="already connected"):
            registry.open(spec)
        request = GenerationRequest(prompt="One, two,", max_tokens=4, sampling=SamplingParams(temperature=0.0))
        result = registry.get(spec.name).submit(request).result(timeout=60)
        assert done.wait(10) and result.generated_tokens > 0
        assert any(result.request_id in e.tokens for e in events)  # its events reached the registry's subscriber
    finally:
        registry.close_all()
    assert registry.names() == [] and registry.get(spec.name) is None


def test_an_unreachable_server_is_refused_with_its_cause_and_nothing_is_registered():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    registry = BackendRegistry(lambda event: None)
    with pytest.raises(ConnectionError, match=f"cannot reach http://127.0.0.1:{port}/v1"):
        registry.open(BackendSpec(kind="server", url=f"http://127.0.0.1:{port}/v1"))
    assert registry.names() == []
