"""What a client measures of a server's work, as a StatsSnapshot (docs/engine.md, "Statistics").

The same definitions as the engine's: `decode_tps` is generated tokens per second of time spent generating since
the last reset (for a client: wall time with at least one reply streaming, from its first token to its end), and
`recent_decode_tps` the tokens of the trailing window of wall clock (app/engine/rates.py). A reply's tokens count
chunk by chunk while it streams and become the server's `usage.completion_tokens` when it ends. Prefill is not
visible from a client: `prefill_tps` and `recent_prefill_tps` are None. Thread-safe.
"""

from __future__ import annotations

import threading
import time

from app.backends.stream_run import StreamRun
from app.engine import StatsSnapshot
from app.engine.rates import WindowRate


class ClientStats:
    def __init__(self):
        self._lock = threading.Lock()
        self._generating = 0  # replies between their first token and their end
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self._tokens = self._prompt = self._completed = 0
            self._busy_s, self._busy_since = 0.0, time.perf_counter()
            self._recent = WindowRate(clock=time.perf_counter)

    def tokens(self, run: StreamRun, counted: int, first: bool, now: float) -> None:
        """`counted` tokens of `run` arrived at `now` (`first`: its first ones)."""
        with self._lock:
            self._tokens += counted
            self._recent.add(counted, now)
            if first:
                self._generating += 1
                if self._generating == 1:
                    self._busy_since = now

    def ended(self, run: StreamRun, now: float) -> None:
        with self._lock:
            self._prompt += run.prompt_tokens
            self._tokens += run.tokens - run.chunk_tokens  # the server's usage count replaces the live one
            self._completed += 1
            if run.t_first is not None:
                self._generating -= 1
                if self._generating == 0:
                    self._busy_s += now - self._busy_since

    def snapshot(self, n_slots: int, active: int, queued: int, steps: int, server: dict | None) -> StatsSnapshot:
        now = time.perf_counter()
        with self._lock:
            busy = self._busy_s + (now - self._busy_since if self._generating else 0.0)
            tokens, recent = self._tokens, self._recent.rate(now)
            prompt, completed = self._prompt, self._completed
        return StatsSnapshot(n_slots=n_slots, active=active, queued=queued,
                             decode_tps=tokens / busy if busy > 0 and tokens else None, prefill_tps=None,
                             avg_concurrent=None, steps=steps, decode_tokens=tokens, decode_time_s=busy,
                             prefill_tokens=0, prefill_time_s=0.0, prompt_tokens_total=prompt,
                             generated_tokens_total=tokens, completed=completed, slot_context_used=[],
                             n_ctx_per_slot=0, server=server, recent_decode_tps=recent)
