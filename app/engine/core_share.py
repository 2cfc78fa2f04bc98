"""Core sharing: engines generating at the same time split the CPU threads between them.

ggml's CPU worker threads spin while they wait for work, so two engines each running all the machine's threads
oversubscribe the cores. Each engine says before every llama_decode that it is busy, and when it goes idle that
it is not; a busy engine decodes with `max(1, n_threads // busy engines)` threads. Alone it has all its
threads again at its next decode. Measured on 2 cores (docs/engine.md, "Several local models"): this kept the
aggregate of two engines at or above one engine's throughput, where taking turns at llama_decode lost up to
16% at one stream each.

With layers offloaded to a GPU (EngineConfig.n_gpu_layers) the division still applies, but only to the work
left on the CPU (layers kept there, the sampling and the batch assembly); the GPU's own queue and memory are
shared by whatever runs on it, and nothing here divides them. The measurements above, and the two-engine
figures in docs/benchmarks.md, are CPU-only: with offload they are not measured.
"""

from __future__ import annotations

import threading


class CoreShare:
    """Which engines are generating now; thread-safe (engines call it from their own threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy: set[int] = set()

    def busy(self, engine_key: int) -> int:
        """Mark an engine busy; returns how many engines are busy now (its threads are divided by that)."""
        with self._lock:
            self._busy.add(engine_key)
            return len(self._busy)

    def idle(self, engine_key: int) -> None:
        with self._lock:
            self._busy.discard(engine_key)

    @property
    def n_busy(self) -> int:
        with self._lock:
            return len(self._busy)


CORES = CoreShare()  # one per process: every engine shares the same cores
