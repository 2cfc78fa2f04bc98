"""What OpenAIBackend counts and reports, against a real HTTP server on 127.0.0.1 that plays a fixed script
(stdlib http.server, no mocks): the server's usage count wins over chunk counts, each rate has its one
definition, and the server's /metrics are polled from the first stats() call. No llama-server needed."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.backends import BackendInfo, OpenAIBackend
from app.engine import GenerationRequest, SamplingParams

METRICS = "llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\nllamacpp:tokens_predicted_total 42\n"


def sse(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def chunk(content: str | None = None, finish: str | None = None, usage: dict | None = None) -> bytes:
    choices = [] if usage else [{"index": 0, "delta": {"content": content} if content else {},
                                 "finish_reason": finish}]
    return sse({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": choices,
                **({"usage": usage} if usage else {})})


class ScriptedServer(ThreadingHTTPServer):
    """Answers every chat request with the same stream: three text chunks carrying five tokens between them
    (as a server does when a chunk ends mid-character or it batches), a finish, and usage saying 5."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.metrics_asked = threading.Event()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = (METRICS if self.path == "/metrics" else json.dumps(
            {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]})).encode()
        if self.path == "/metrics":
            self.server.metrics_asked.set()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        usage = {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12}
        for part in (chunk("One, "), chunk("two, three"), chunk(", four, five."), chunk(finish="stop"),
                     chunk(usage=usage), b"data: [DONE]\n\n"):
            self.wfile.write(part)
            self.wfile.flush()
            time.sleep(0.02)  # the client sees separate chunks, with time between the first and the last


@pytest.fixture
def server():
    server = ScriptedServer()
    yield server
    server.shutdown()
    server.server_close()


def chat() -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": "Count to five."}],
                             sampling=SamplingParams(temperature=0), max_tokens=16)


def test_token_counts_come_from_the_servers_usage_and_chunks_only_while_streaming(server):
    backend = OpenAIBackend(server.url)
    live: list[int] = []
    backend.subscribe(lambda event: live.extend(event.tokens.values()))
    result = backend.submit(chat()).result(timeout=30)
    assert result.finish_reason == "stop" and result.text == "One, two, three, four, five."
    assert result.generated_tokens == 5 and result.prompt_tokens == 7  # usage, not the 3 chunks
    assert live[:3] == [1, 2, 3]  # while streaming: the chunks received so far
    snap = backend.stats()
    assert snap.generated_tokens_total == snap.decode_tokens == 5 and snap.completed == 1
    assert snap.active == 0 and snap.queued == 0
    # The mean: tokens per second of time with a reply streaming; the recent rate: the chunks' tokens in the
    # trailing window of wall clock (3 chunks, at most all of them still inside it).
    assert snap.decode_time_s > 0 and snap.decode_tps == pytest.approx(5 / snap.decode_time_s)
    assert 0.0 <= snap.recent_decode_tps and snap.recent_prefill_tps is None and snap.prefill_tps is None
    assert backend.close()


def test_stats_polls_the_server_metrics_without_a_subscriber(server):
    backend = OpenAIBackend(server.url)
    backend.stats()  # the stats panel's first tick, before anything subscribed
    assert server.metrics_asked.wait(10)
    deadline = time.monotonic() + 10
    while backend.stats().server is None and time.monotonic() < deadline:
        server.metrics_asked.wait(0.05)  # the poller stores its answer just after reading it
    figures = backend.stats().server
    assert figures["available"] and figures["generated_total"] == 42 and figures["running"] == 1
    assert backend.close()


def test_model_info_is_typed_and_learns_the_server(server):
    backend = OpenAIBackend(server.url)
    before = backend.model_info
    assert isinstance(before, BackendInfo) and before.kind == "server" and before.model is None
    assert backend.connect() == ["m"]
    info = backend.model_info
    assert (info.model, info.url, info.server_kind, info.name) == ("m", server.url, "llamacpp", backend.name)
    assert info.local is None and info.path == ""
    assert backend.close()
