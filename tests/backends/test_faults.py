"""OpenAIBackend against real sockets that misbehave (stall, send garbage, refuse): every fault ends the
request with a message naming the URL and the cause; nothing hangs. No llama-server needed."""

import socket
import threading

import pytest

from app.backends import OpenAIBackend
from app.engine import GenerationRequest, SamplingParams
from tests.servers import free_port


def chat(text: str) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": text}], sampling=SamplingParams(temperature=0),
                             max_tokens=8)


# --- faults from real sockets --------------------------------------------------------------------------------
def misbehaving_server(reply: bytes, then_stall: bool) -> tuple[str, socket.socket]:
    """A real TCP server that answers every request with `reply` and then stalls or closes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
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
