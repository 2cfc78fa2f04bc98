"""Real servers on 127.0.0.1 for the backend and window tests: llama-server built from the vendored llama.cpp
(`make llama-server`, cached outside the tree) and llama-cpp-python's own server. No HTTP mocks.

Tests that use them are marked `servers` and run in `.ci/run` after `make test` (`make test-servers`); without a
built llama-server they skip and say how to build it. Import the fixtures into a conftest or test module.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import llama_cpp
import pytest

from app.bench import model_files

CACHE = Path(os.environ.get("CHORUS_CACHE", Path.home() / ".cache" / "chorus"))
LLAMA_SERVER = Path(os.environ.get("CHORUS_LLAMA_SERVER",
                                   CACHE / f"llama-server-{llama_cpp.__version__}" / "llama-server"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 120.0) -> None:
    """Until the server answers `url` with 200 (its own readiness signal), or it died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout} s")


class Server:
    def __init__(self, args: list[str], ready_path: str, port: int | None = None):
        self.port = port or free_port()
        self.args, self.ready_path = args, ready_path
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "Server":
        return self.launch().wait_ready()

    def launch(self) -> "Server":
        """Start the process without waiting for it (other set-up can run while it loads); then `wait_ready`."""
        # Its log goes to a file: an unread pipe fills up and blocks the server.
        self.log = Path(tempfile.mkstemp(prefix="chorus-server-", suffix=".log")[1])
        with self.log.open("w") as log:
            self.proc = subprocess.Popen([*self.args, "--host", "127.0.0.1", "--port", str(self.port)],
                                         stdout=log, stderr=subprocess.STDOUT)
        return self

    def wait_ready(self) -> "Server":
        wait_ready(f"http://127.0.0.1:{self.port}{self.ready_path}", self.proc, self.log)
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if getattr(self, "log", None):
            self.log.unlink(missing_ok=True)


def llama_server(model_path, *extra: str) -> Server:
    if not LLAMA_SERVER.exists():
        pytest.skip(f"llama-server is not built: run `make llama-server` (expected at {LLAMA_SERVER})")
    return Server([str(LLAMA_SERVER), "-m", str(model_path), "-np", "4", "-c", "4096", "-t", "2", "--metrics",
                   *extra], "/health")


@pytest.fixture
def start_llama_server(model_path):
    started = []

    def start(*extra: str, port: int | None = None) -> Server:
        server = llama_server(model_path, *extra)
        if port:
            server.port = port
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.kill()


@pytest.fixture
def python_server(model_path):
    server = Server([sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--n_ctx", "2048",
                     "--n_threads", "2"], "/v1/models")
    yield server.start()
    server.kill()


def llama_cpp_templates() -> dict[str, str]:
    """name -> source of the chat templates llama.cpp ships (app/bench/model_files.py reads them from the sdist
    `make llama-server` keeps in CACHE, or a tree named by CHORUS_LLAMA_CPP_SOURCE); {} when neither is there."""
    return model_files.llama_cpp_templates(CACHE)
