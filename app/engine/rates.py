"""Throughput over a trailing window of wall clock: the one definition of every "recent" rate.

`StatsSnapshot.recent_decode_tps` and `recent_prefill_tps`, from the engine and from a server backend alike, are
`WindowRate.rate()`: the tokens counted in the last `limits.RATE_WINDOW_S` seconds, divided by that many seconds
(so a burst shows as a burst, and an idle backend reads 0 one window after its last token). `count()` is the
window's plain sum, for ratios of two windows (the engine's recent tokens per decode step). Not thread-safe: the
owner calls it under its own lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from app.engine import limits


class WindowRate:
    def __init__(self, window_s: float = limits.RATE_WINDOW_S, clock: Callable[[], float] = time.monotonic):
        if window_s <= 0:
            raise ValueError(f"the rate window must be positive, got {window_s}")
        self.window_s = window_s
        self._clock = clock
        self._events: deque[tuple[float, int]] = deque()  # (time, count), oldest first
        self._sum = 0

    def add(self, count: int, now: float | None = None) -> None:
        """Count `count` tokens at `now` (default: the clock's now)."""
        if count:
            now = self._clock() if now is None else now
            self._events.append((now, count))
            self._sum += count
            self._trim(now)

    def rate(self, now: float | None = None) -> float:
        """Tokens counted in (now - window, now], per second of the window."""
        return self.count(now) / self.window_s

    def count(self, now: float | None = None) -> int:
        """Everything counted in (now - window, now]."""
        self._trim(self._clock() if now is None else now)
        return self._sum

    def clear(self) -> None:
        self._events.clear()
        self._sum = 0

    def _trim(self, now: float) -> None:
        while self._events and self._events[0][0] <= now - self.window_s:
            self._sum -= self._events.popleft()[1]
