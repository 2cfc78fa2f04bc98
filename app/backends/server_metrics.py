"""A server's own figures from its Prometheus `/metrics` (llama-server with `--metrics`, vLLM), polled on a
thread and parsed with prometheus_client's text parser into running, waiting and generation throughput.

A server without `/metrics` (Ollama, llama-cpp-python's server, llama-server without the flag) is reported as
`{"available": False, "reason": ...}` so the stats panel can say so and show the client's view only.
"""

from __future__ import annotations

import threading
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

POLL_S = 1.0
# (our name, the metric names servers use for it)
RUNNING = ("llamacpp:requests_processing", "vllm:num_requests_running")
WAITING = ("llamacpp:requests_deferred", "vllm:num_requests_waiting")
GENERATED = ("llamacpp:tokens_predicted_total", "vllm:generation_tokens_total")
PROMPT = ("llamacpp:prompt_tokens_total", "vllm:prompt_tokens_total")


def metrics_url(base_url: str) -> str:
    root = base_url.rstrip("/")
    return (root[:-3] if root.endswith("/v1") else root) + "/metrics"


def parse(text: str) -> dict[str, float]:
    """Every sample's value by its name, summed over labels (a counter's `_total` keeps its name)."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    return values


def _first(values: dict[str, float], names) -> float | None:
    return next((values[n] for n in names if n in values), None)


class MetricsPoller:
    def __init__(self, base_url: str):
        self.url = metrics_url(base_url)
        self._latest: dict | None = None
        self._previous: tuple[float, float] | None = None  # (time, generated tokens) for the rate
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def start(self) -> None:
        """Start polling (idempotent, any thread; the first stats() or subscribe() call does it)."""
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="chorus-metrics", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def latest(self) -> dict | None:
        return self._latest

    def poll_once(self) -> dict:
        try:
            response = httpx.get(self.url, timeout=2.0)
        except httpx.HTTPError as exc:
            return {"available": False, "reason": f"{self.url}: {exc}"}
        if response.status_code != 200:
            return {"available": False, "reason": f"{self.url} answered HTTP {response.status_code} (no metrics)"}
        try:
            values = parse(response.text)
        except ValueError as exc:
            return {"available": False, "reason": f"{self.url} is not Prometheus text: {exc}"}
        now, generated = time.monotonic(), _first(values, GENERATED)
        rate = None
        if generated is not None and self._previous and now > self._previous[0]:
            rate = max(0.0, (generated - self._previous[1]) / (now - self._previous[0]))
        if generated is not None:
            self._previous = (now, generated)
        return {"available": True, "running": _first(values, RUNNING), "waiting": _first(values, WAITING),
                "generated_total": generated, "prompt_total": _first(values, PROMPT), "generation_tps": rate,
                "raw": values}

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._latest = self.poll_once()
            self._stop.wait(POLL_S)
