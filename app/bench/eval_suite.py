"""`bench --eval`: one evaluation suite run to the end on Chorus's engine and on llama-server, wall time for each.

The suite: CASES test cases × 2 variants (greedy; seeded at temperature 0.8) of one chat prompt whose system
message is the same ≥ 300-token text for every cell, each cell graded by an `llm-rubric` judge on the same
backend. Both runs go through the same EvaluationRunner and SessionRunner with the same concurrency; only the
backend differs: a LocalBackend, or an OpenAIBackend on the llama-server that `make llama-server` built (started
here with the same model, threads and parallel slots, prompt cache on). Where that binary is missing the figure
is Chorus's alone, and the report says how to build it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import llama_cpp
import yaml

from app.backends import LocalBackend, OpenAIBackend
from app.backends.registry import MAIN, BackendRegistry
from app.engine import EngineConfig
from app.evaluate import load_config, stats
from app.evaluate.runner import EvaluationRunner
from app.models import default_model_path
from app.session import SessionRunner

CASES = 48
SLOTS = 8
MAX_TOKENS = 48
TOPICS = ("rivers", "volcanoes", "bees", "glaciers", "comets", "forests", "deserts", "tides", "clouds", "coral",
          "owls", "salt", "bridges", "clocks", "maps", "bread")
SYSTEM = " ".join(
    f"Rule {i}: answer the question about the named topic in one plain sentence, without lists, headings or "
    f"markdown, using simple words a child would know, and never repeat the question back." for i in range(1, 13))


def llama_server_path() -> Path:
    cache = Path(os.environ.get("CHORUS_CACHE", Path.home() / ".cache" / "chorus"))
    return cache / f"llama-server-{llama_cpp.__version__}" / "llama-server"


def write_suite(folder: Path, model: Path) -> Path:
    """The promptfoo config (and its CSV of cases) in `folder`; returns the config's path."""
    rows = ["topic,aspect"] + [f"{TOPICS[i % len(TOPICS)]},{('size', 'colour', 'history')[i % 3]} {i}"
                               for i in range(CASES)]
    (folder / "cases.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    prompt = json.dumps([{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": "Tell me one fact about the {{aspect}} of {{topic}}"}])
    config = {
        "prompts": [prompt],
        "providers": [{"id": f"file://{model}", "label": "greedy", "config": {"temperature": 0,
                                                                            "max_tokens": MAX_TOKENS}},
                      {"id": f"file://{model}", "label": "sampled", "config": {"temperature": 0.8, "seed": 1,
                                                                              "max_tokens": MAX_TOKENS}}],
        "tests": "file://cases.csv",
        "defaultTest": {"assert": [{"type": "llm-rubric", "value": "The reply states a fact about {{topic}}"}]},
    }
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def run_suite(config: Path, backend) -> dict:
    """Run the suite on `backend`; its wall time in seconds and what the cells came to."""
    suite = load_config(config)
    evaluation = suite.evaluation(judge="local")
    runner: SessionRunner | None = None
    registry = BackendRegistry(lambda event: runner.feed(event))  # the runner exists before anything is submitted
    runner = SessionRunner(registry)
    registry.set_main(backend)  # every variant and the judge run on it
    try:
        started = time.perf_counter()
        driver = EvaluationRunner(evaluation, runner, lambda target: MAIN, suite.base_dir, SLOTS)
        driver.start()
        if not driver.drive(timeout=3600):
            raise TimeoutError("the evaluation suite did not finish within an hour")
        wall = time.perf_counter() - started
    finally:
        registry.set_main(None)  # the caller closes the backend
    total = stats.totals(evaluation)
    return {"wall_s": wall, "cells": len(evaluation.cells), "passed": total.successes, "failed": total.failures,
            "errors": total.errors, "unreliable": total.unreliable}  # unreliable: the judge failed its calibration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_llama_server(binary: Path, model: Path, threads: int, n_ctx_per_slot: int, log: Path, slots: int = SLOTS,
                       extra: list[str] | tuple[str, ...] = ()):
    port = _free_port()
    proc = subprocess.Popen([str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                             "-np", str(slots), "-c", str(slots * n_ctx_per_slot), "-t", str(threads),
                             "--jinja", *extra], stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama-server exited with {proc.returncode}; its log: {log}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as reply:
                if reply.status == 200:
                    return proc, url + "/v1"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise TimeoutError(f"llama-server did not become ready; its log: {log}")


def eval_bench(threads: int, n_ctx_per_slot: int = 1024) -> dict:
    """Chorus's wall time for the suite, llama-server's, and their ratio (None without llama-server)."""
    model = default_model_path()
    with tempfile.TemporaryDirectory() as tmp:
        config = write_suite(Path(tmp), model)
        engine = EngineConfig(model_path=model, n_slots=SLOTS, n_ctx_per_slot=n_ctx_per_slot, n_threads=threads)
        with LocalBackend(engine) as backend:
            chorus = run_suite(config, backend)
        binary = llama_server_path()
        if not binary.is_file():
            return {"chorus": chorus, "llama_server": None, "ratio": None,
                    "note": f"llama-server is not built ({binary}): run `make llama-server` for the comparison"}
        proc, url = start_llama_server(binary, model, threads, n_ctx_per_slot, Path(tmp) / "llama-server.log")
        try:
            backend = OpenAIBackend(url, model=None, max_concurrency=SLOTS)
            try:
                server = run_suite(config, backend)
            finally:
                backend.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return {"chorus": chorus, "llama_server": server, "ratio": chorus["wall_s"] / server["wall_s"],
            "setup": {"cases": CASES, "variants": 2, "slots": SLOTS, "max_tokens": MAX_TOKENS,
                      "judge": "llm-rubric on the same backend", "threads": threads}}
