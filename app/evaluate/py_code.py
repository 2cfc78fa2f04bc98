"""User Python (assertions, transforms) run in worker processes, never in Chorus's own: a small pool of
`py_worker.py` processes, each answering one request at a time, kept between calls so a check costs a pipe round
trip. A call that runs past its time limit kills its worker (the next call starts a fresh one), so a check that
loops or allocates without end ends that call only. The Python is $PROMPTFOO_PYTHON if set (as in promptfoo),
else the interpreter Chorus runs on; a packaged Chorus (no separate interpreter) uses `python3` from PATH.
`WorkerPool` is the pool for any language whose worker speaks this JSON-lines protocol (Ruby: rb_code.py).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from app.evaluate.js_code import CodeLimit

TIME_LIMIT_S = 10.0
WORKERS = 2
_WORKER = Path(__file__).with_name("py_worker.py")


@dataclass(frozen=True)
class PyResult:
    value: object = None
    error: str | None = None
    where: str = ""  # file:line of the failure in the user's code
    trace: str = ""


def python_executable() -> str:
    chosen = os.environ.get("PROMPTFOO_PYTHON")
    if chosen:
        return chosen
    if getattr(sys, "frozen", False):
        return shutil.which("python3") or shutil.which("python") or "python3"
    return sys.executable


class _Worker:
    def __init__(self, command: list[str], language: str) -> None:
        self.language = language
        self.process = subprocess.Popen(  # noqa: S603 - the user agreed to run this config's code
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            encoding="utf-8")
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.answers.put(line)
        self.answers.put(None)

    def ask(self, request: dict, time_limit: float) -> dict:
        self.process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self.process.stdin.flush()
        try:
            line = self.answers.get(timeout=time_limit)
        except queue.Empty:
            self.kill()
            raise CodeLimit(f"the {self.language} ran past its time limit ({time_limit:g} s)") from None
        if line is None:
            code = self.process.wait()
            raise CodeLimit(f"the {self.language} process ended (exit code {code}): out of memory, or it exited")
        return json.loads(line)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


class WorkerPool:
    """Up to WORKERS worker processes of one language, started on first use; `close` ends them."""

    language = ""

    def __init__(self, workers: int = WORKERS, time_limit: float = TIME_LIMIT_S) -> None:
        self.time_limit = time_limit
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(workers):
            self._idle.put(None)  # a free place; a worker starts when it is first needed
        self._all: list[_Worker] = []
        self._lock = threading.Lock()

    def command(self) -> list[str]:
        """How a worker process starts; raises CodeLimit when the language is not installed."""
        raise NotImplementedError

    def _run(self, request: dict) -> PyResult:
        worker, program = self._idle.get(), self.language
        try:
            if worker is None or not worker.alive:
                command = self.command()
                program = command[0]
                worker = _Worker(command, self.language)
                with self._lock:
                    self._all.append(worker)
            answer = worker.ask(request, self.time_limit)
        except (OSError, BrokenPipeError) as exc:
            raise CodeLimit(f"cannot run {self.language} ({program}): {exc}") from None
        finally:
            self._idle.put(worker if worker is not None and worker.alive else None)
        if "error" in answer:
            return PyResult(error=answer["error"], where=answer.get("where", ""), trace=answer.get("trace", ""))
        return PyResult(value=answer["ok"])

    def call_file(self, path: Path, function: str, args: list) -> PyResult:
        return self._run({"path": str(path), "function": function, "args": args})

    def call_code(self, code: str, function: str, args: list) -> PyResult:
        return self._run({"code": code, "function": function, "args": args})

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            if worker.alive:
                worker.process.stdin.close()
            worker.kill()


class PythonPool(WorkerPool):
    language = "Python"

    def command(self) -> list[str]:
        return [python_executable(), "-u", "-c", _WORKER.read_text(encoding="utf-8")]
