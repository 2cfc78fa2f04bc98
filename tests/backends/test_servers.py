"""OpenAIBackend against real servers: llama-server (metrics, cancel, keys, a kill mid-stream) and
llama-cpp-python's own server; faults from real sockets that misbehave."""

import json
import subprocess
import sys
import threading
import time

import httpx
import jsonschema
import pytest

from app.backends import OpenAIBackend
from app.engine import GenerationRequest, SamplingParams
from tests.conftest import TEST_THREADS
from tests.fixtures.servers import free_port

pytestmark = pytest.mark.servers

GREEDY = SamplingParams(temperature=0.0)


def chat(text: str, max_tokens: int = 24, **kwargs) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": text}], sampling=GREEDY, max_tokens=max_tokens,
                             **kwargs)


class Events:
    """Every StepEvent, in order, with first-delta and finish order per request."""

    def __init__(self, backend):
        self.first: dict[int, int] = {}
        self.finished: dict[int, int] = {}
        self.count = 0
        self.lock = threading.Lock()
        backend.subscribe(self)

    def __call__(self, event) -> None:
        with self.lock:
            self.count += 1
            for request_id in event.deltas:
                self.first.setdefault(request_id, self.count)
            for completion in event.finished:
                self.finished[completion.request_id] = self.count


def test_four_requests_stream_at_once_and_the_server_metrics_appear(start_llama_server):
    server = start_llama_server()
    backend = OpenAIBackend(server.url, max_concurrency=4)
    events = Events(backend)
    handles = [backend.submit(chat(f"Count to {n} in words.", max_tokens=40)) for n in (5, 6, 7, 8)]
    results = [h.result(timeout=120) for h in handles]
    assert all(r.finish_reason in ("stop", "length") and r.text and r.generated_tokens > 0 for r in results)
    assert all(r.prompt_tokens > 0 and r.ttft_s is not None for r in results)  # from the usage chunk, client clock
    assert max(events.first[h.id] for h in handles) < min(events.finished[h.id] for h in handles)  # overlapped
    generated = sum(r.generated_tokens for r in results)
    deadline = time.monotonic() + 20  # the poller may have read /metrics while the last requests were finishing
    while time.monotonic() < deadline and (backend.stats().server or {}).get("generated_total", 0) < generated:
        time.sleep(0.1)
    server_view = backend.stats().server
    assert server_view["available"] and server_view["generated_total"] >= generated
    assert "llamacpp:requests_processing" in server_view["raw"]
    backend.close()


def test_each_server_kind_is_recognised_and_unapplied_settings_are_reported(start_llama_server, python_server):
    llama = OpenAIBackend(start_llama_server().url)
    python = OpenAIBackend(python_server.url)
    assert llama.list_models() and python.list_models()
    assert (llama.server_kind, python.server_kind) == ("llamacpp", "me")
    request = chat("Say yes.", max_tokens=4, logprobs=0)
    sampled = GenerationRequest(prompt="Yes or no:", max_tokens=4, logprobs=2,
                                sampling=SamplingParams(temperature=0.0, repeat_penalty=1.1))
    assert llama.submit(request).result(timeout=120).note == ""  # llama-server applies everything
    note = python.submit(sampled).result(timeout=120).note
    assert note.startswith("not applied on llama-cpp-python's server: token probabilities on a raw prompt")
    llama.close()
    python.close()


def test_cancel_closes_the_stream_and_the_server_slot_goes_idle(start_llama_server):
    server = start_llama_server()
    backend = OpenAIBackend(server.url)
    handle = backend.submit(chat("Write a very long story about the sea.", max_tokens=3000))
    next(iter(handle.stream(timeout=60)))  # it is generating
    handle.cancel()
    result = handle.result(timeout=30)
    assert result.finish_reason == "cancelled" and result.text
    deadline = time.monotonic() + 20
    slots = []
    while time.monotonic() < deadline:
        slots = httpx.get(f"http://127.0.0.1:{server.port}/slots", timeout=5).json()
        if not any(s.get("is_processing") for s in slots):
            break
        time.sleep(0.1)
    assert slots and not any(s.get("is_processing") for s in slots)  # the server stopped generating
    backend.close()


def test_a_wrong_api_key_is_a_401_message_naming_the_server(start_llama_server):
    server = start_llama_server("--api-key", "right-key")
    wrong = OpenAIBackend(server.url, api_key="wrong-key")
    result = wrong.submit(chat("Hi.")).result(timeout=30)
    assert result.finish_reason == "error" and "401" in result.error and server.url in result.error
    right = OpenAIBackend(server.url, api_key="right-key")
    assert right.submit(chat("Hi.", max_tokens=4)).result(timeout=60).finish_reason in ("stop", "length")
    wrong.close()
    right.close()


def test_a_server_killed_mid_stream_errors_and_a_restart_works(start_llama_server):
    server = start_llama_server()
    backend = OpenAIBackend(server.url)
    handle = backend.submit(chat("Write a very long story about a forest.", max_tokens=3000))
    next(iter(handle.stream(timeout=60)))
    server.kill()
    result = handle.result(timeout=60)
    assert result.finish_reason == "error" and server.url in result.error
    restarted = start_llama_server(port=server.port)
    assert backend.submit(chat("Hi.", max_tokens=4)).result(timeout=60).finish_reason in ("stop", "length")
    assert restarted.port == server.port
    backend.close()


def test_llama_cpp_python_server_streams_chat_and_completions_without_metrics(python_server):
    backend = OpenAIBackend(python_server.url)
    backend.subscribe(lambda event: None)
    chat_result = backend.submit(chat("Name a colour.", max_tokens=12)).result(timeout=120)
    raw = backend.submit(GenerationRequest(prompt="The capital of France is", sampling=GREEDY,
                                           max_tokens=8)).result(timeout=120)
    assert chat_result.finish_reason in ("stop", "length") and chat_result.text
    assert raw.finish_reason in ("stop", "length") and raw.text
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and backend.stats().server is None:
        time.sleep(0.1)
    assert backend.stats().server["available"] is False and "metrics" in backend.stats().server["reason"]
    backend.close()


def test_run_with_server_writes_results(start_llama_server, tmp_path):
    server = start_llama_server()
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"Say {i}."}],
                                          "max_tokens": 8}) + "\n" for i in range(3)))
    run = subprocess.run([sys.executable, "-m", "app", "run", str(source), "--server", server.url, "--slots", "2"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert sorted(r["id"] for r in results) == ["q0", "q1", "q2"] and all(r["text"] for r in results)
    down = subprocess.run([sys.executable, "-m", "app", "run", str(source), "--server",
                           f"http://127.0.0.1:{free_port()}/v1"], capture_output=True, text=True, timeout=120)
    assert down.returncode == 2 and "cannot reach" in down.stderr and "Traceback" not in down.stderr


def test_bench_server_compares_the_engine_with_llama_server(start_llama_server, tmp_path):
    server = start_llama_server("-np", "8")  # N = 8 must all generate at once
    out = tmp_path / "server-bench.json"
    run = subprocess.run([sys.executable, "-m", "app", "bench", "--quick", "--threads", str(TEST_THREADS),
                          "--server", server.url, "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(out.read_text())
    for side in ("engine", "server"):
        assert set(result["throughput"][side]) == {"4", "8"} and all(v > 0 for v in result["throughput"][side].values())
    assert set(result["ratios"]["engine_vs_server"]) == {"4", "8"} and result["server"] == server.url
    assert "engine/server" in run.stdout


def test_bench_server_reports_an_unreachable_server():
    url = f"http://127.0.0.1:{free_port()}/v1"
    run = subprocess.run([sys.executable, "-m", "app", "bench", "--server", url], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and f"cannot reach {url}" in run.stderr


ANIMAL = {"type": "object", "additionalProperties": False, "required": ["name", "legs", "kind"],
          "properties": {"name": {"type": "string", "maxLength": 20}, "legs": {"type": "integer"},
                         "kind": {"enum": ["mammal", "bird", "insect"]}}}
YES_NO = 'root ::= "yes" | "no"'


def constrained(chat_request: bool, **fields) -> GenerationRequest:
    where = ({"messages": [{"role": "user", "content": "Describe an animal as JSON."}]} if chat_request
             else {"prompt": "An animal, as JSON:"})
    return GenerationRequest(**where, sampling=GREEDY, max_tokens=80, **fields)


def assert_formats_applied(backend) -> None:
    for chat_request in (True, False):
        result = backend.submit(constrained(chat_request, json_schema=ANIMAL)).result(timeout=120)
        assert result.finish_reason == "stop" and result.error is None, result
        jsonschema.validate(json.loads(result.text), ANIMAL)
        assert result.note == "" and result.unapplied == ()
        answer = backend.submit(constrained(chat_request, grammar=YES_NO)).result(timeout=120)
        assert answer.finish_reason == "stop" and answer.text in ("yes", "no") and answer.unapplied == ()


def test_llama_server_applies_schemas_and_grammars_and_reports_usage_counts(start_llama_server):
    backend = OpenAIBackend(start_llama_server().url)
    backend.connect()
    assert backend.model_info.server_kind == "llamacpp"
    assert_formats_applied(backend)
    exact = backend.submit(GenerationRequest(prompt="Once upon a time", sampling=GREEDY, max_tokens=12,
                                             ignore_eos=True)).result(timeout=120)
    assert exact.finish_reason == "length" and exact.generated_tokens == 12  # usage.completion_tokens
    assert backend.close()


def test_llama_cpp_python_server_applies_schemas_and_grammars(python_server):
    backend = OpenAIBackend(python_server.url)
    backend.connect()
    assert backend.model_info.server_kind == "me"
    assert_formats_applied(backend)  # its chat takes response_format json_object + schema, not json_schema
    assert backend.close()
