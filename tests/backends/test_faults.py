"""OpenAIBackend against real sockets that misbehave (stall, send garbage, refuse): every fault ends the
request with a message naming the URL and the cause; nothing hangs. No llama-server needed."""

import json
import socket
import threading

import pytest

from app.backends import OpenAIBackend
from app.engine import GenerationRequest, SamplingParams
from tests.fixtures.servers import free_port


def chat(text: str) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": text}], sampling=SamplingParams(temperature=0),
                             max_tokens=8)


# --- faults from real sockets --------------------------------------------------------------------------------
def misbehaving_server(reply: bytes, then_stall: bool) -> tuple[str, socket.socket]:
    """A real TCP server that answers every request with `reply` and then stalls or closes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held = []  # a stalled connection stays open when the next one (the metrics poll) is accepted

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            conn.recv(65536)
            conn.sendall(reply)
            if not then_stall:
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1", listener


SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"


@pytest.mark.parametrize("case, reply, stall, words", [
    ("stalls", SSE_HEAD, True, "stopped answering"),
    ("garbage", SSE_HEAD + b"data: {not json at all\n\n", False, "not valid"),
    ("503", b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", False, "503"),
    ("429", b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 4\r\n\r\nslow", False, "429"),
    ("404", b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno", False, "404"),
])
def test_misbehaving_servers_end_the_request_with_a_clear_error(case, reply, stall, words):
    url, listener = misbehaving_server(reply, stall)
    backend = OpenAIBackend(url, read_timeout_s=1.0)
    result = backend.submit(chat("Hi.")).result(timeout=30)
    assert result.finish_reason == "error" and words in result.error and url in result.error, result.error
    listener.close()
    backend.close()


def test_nothing_listening_and_an_unknown_host_are_errors_not_hangs():
    for url in (f"http://127.0.0.1:{free_port()}/v1", "http://chorus-no-such-host.invalid/v1"):
        backend = OpenAIBackend(url)
        result = backend.submit(chat("Hi.")).result(timeout=30)
        assert result.finish_reason == "error" and "cannot reach" in result.error and url in result.error
        backend.close()


# --- a stalled stream: cancel and close act at once, from any thread ----------------------------------------------
def token_chunk(text: str) -> bytes:
    body = json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                       "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
    return f"data: {body}\n\n".encode()


class SilentServer:
    """A real TCP server that answers each request with `reply` (perhaps nothing) and then goes silent, holding
    the connection open until the test ends. `closed` is set when the client drops a connection."""

    def __init__(self, reply: bytes):
        self.reply, self.listener = reply, socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.requests, self.closed = threading.Semaphore(0), threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(self.reply)
        self.requests.release()
        try:
            while conn.recv(65536):  # the rest of the request, if any; then b"" once the client closes
                pass
        except OSError:
            pass
        self.closed.set()

    def stop(self) -> None:
        self.listener.close()
        for conn in self.conns:
            conn.close()


@pytest.mark.parametrize("reply", [SSE_HEAD + token_chunk("Hel"), b""], ids=["one token, then silence",
                                                                          "no answer at all"])
def test_cancel_from_another_thread_ends_a_stalled_request_at_once(reply):
    server = SilentServer(reply)
    backend = OpenAIBackend(server.url)  # the default 60 s read timeout: only a real cancel can end it sooner
    handle = backend.submit(chat("Hi."))
    assert server.requests.acquire(timeout=30)
    if reply:
        assert next(handle.stream(timeout=30)) == "Hel"
    canceller = threading.Thread(target=handle.cancel)
    canceller.start()
    canceller.join(timeout=10)
    result = handle.result(timeout=15)  # well within the read timeout
    assert result.finish_reason == "cancelled" and result.text == ("Hel" if reply else "")
    assert server.closed.wait(15)  # the HTTP response was closed, which is what tells a server to stop
    assert backend.close()
    server.stop()


def test_close_returns_while_the_server_is_still_silent_and_ends_every_request():
    server = SilentServer(SSE_HEAD + token_chunk("Hel"))
    backend = OpenAIBackend(server.url, max_concurrency=2)
    streaming = [backend.submit(chat(f"Hi {n}.")) for n in range(2)]
    queued = backend.submit(chat("Waiting for a free connection."))
    for handle in streaming:
        assert next(handle.stream(timeout=30)) == "Hel"
    closer = threading.Thread(target=backend.close)  # the window calls it on the GUI thread
    closer.start()
    closer.join(timeout=15)
    assert not closer.is_alive(), "close() blocked on a silent server"
    results = [h.result(timeout=5) for h in [*streaming, queued]]
    assert [r.finish_reason for r in results] == ["cancelled"] * 3
    assert results[2].ttft_s is None and results[2].text == ""  # never sent
    with pytest.raises(RuntimeError, match="closed"):
        backend.submit(chat("After close."))
    server.stop()
