"""Token masks of a step's JSON-schema sequences, computed by llguidance in one call while llama_decode runs.

A sequence's next mask depends only on the tokens it has accepted, all known before the step's decode starts,
so the masks are computed on a worker thread (llguidance's executor releases the GIL, as llama_decode does) and
collected after the decode. Only sequences whose sampling will read the whole mask ask for one
(`SamplerChain.wants_mask`: truncated sampling); a greedy sequence checks its one likely token instead.
Engine thread only (the worker touches only the matchers it was handed, which nothing else uses meanwhile).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

# False: compute the masks after the decode on the engine thread instead (how the overlap is measured:
# scripts/probes/2026-11-23-constrained-profile.py --sampled --no-overlap).
OVERLAP = True


class MaskBatch:
    def __init__(self, n_slots: int, n_vocab: int):
        self._buffer = np.zeros((n_slots, (n_vocab + 31) // 32), dtype=np.int32)
        self._pool: ThreadPoolExecutor | None = None
        self._executor = None
        self._pending: list = []
        self._future: Future | None = None

    def start(self, sequences) -> None:
        """Begin the masks of `sequences` that want one (each in its slot's row of the buffer)."""
        self._pending = [(seq.sampler.constraint, seq.slot) for seq in sequences
                         if seq.sampler is not None and seq.sampler.wants_mask]
        if not self._pending:
            return
        if self._pool is None:
            from llguidance import LLExecutor

            self._executor = LLExecutor(num_threads=1)  # the decode already has every core: one more thread
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="chorus-masks")
        from llguidance.numpy import fill_next_token_bitmask_par

        matchers = [(constraint.matcher, slot) for constraint, slot in self._pending]
        if OVERLAP:
            self._future = self._pool.submit(fill_next_token_bitmask_par, self._executor, matchers, self._buffer)
        else:
            self._future = Future()
            self._future.set_result(None)
            self._inline = (fill_next_token_bitmask_par, matchers)

    def finish(self) -> None:
        """Wait for the masks begun by `start` and hand each to its constraint."""
        if self._future is None:
            return
        future, self._future = self._future, None
        future.result()
        if not OVERLAP:
            fill, matchers = self._inline
            fill(self._executor, matchers, self._buffer)
        for constraint, slot in self._pending:
            constraint.set_mask(self._buffer[slot])
        self._pending = []

    def close(self) -> None:
        if self._future is not None:
            self._future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
