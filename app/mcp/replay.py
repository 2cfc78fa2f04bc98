"""Record and replay: within a run group, a call with the same server, tool and canonical arguments runs once.

A run group is what the user started together: a sweep, Run all, an evaluation row, one `python -m app run`. Its
`ReplayStore` sends the first call of each (server, tool, arguments) to the server and gives every other pane the
recorded result, marked `replayed`; a call made while the first is still running waits for it rather than run
again. `live=True` sends every call (live for every pane). Only what a tool answered is recorded (its errors
included); a failure of Chorus's side (timeout, crash, denial, cancel) is not, so a retry calls again.

The recordings serialise (`RecordedCall`, msgspec, as the session file) so a reopened session replays them unless
live calls are asked for. They hold what the tool answered, never the server's configuration or its secrets.
"""

from __future__ import annotations

import concurrent.futures
import threading

import msgspec

from app.mcp.results import DEFAULT_TIMEOUT_S, ToolResult, canonical_arguments, error_result


class RecordedCall(msgspec.Struct, omit_defaults=True):
    """One recorded tool answer, as the session file holds it."""

    server: str
    tool: str
    arguments: str  # canonical JSON
    content: str
    is_error: bool = False
    images: list[str] = []
    truncated: bool = False
    seconds: float = 0.0


def _record(result: ToolResult) -> RecordedCall:
    return RecordedCall(result.server, result.tool, result.arguments, result.content, result.is_error,
                        list(result.images), result.truncated, result.seconds)


def _result(record: RecordedCall) -> ToolResult:
    return ToolResult(record.server, record.tool, record.arguments, record.content, record.is_error,
                      tuple(record.images), record.truncated, seconds=record.seconds)


class ReplayStore:
    """The recorded calls of one run group, and the way its calls reach the hub (`call`). Thread-safe."""

    def __init__(self, hub, live: bool = False, records: list[RecordedCall] | tuple = ()):
        """`hub`: anything with `call(server, tool, arguments, call_id, timeout_s) -> Future[ToolResult]` (McpHub).
        `records`: recordings to replay (a reopened session's)."""
        self.hub, self.live = hub, live
        self._lock = threading.Lock()
        self._done: dict[tuple, ToolResult] = {(r.server, r.tool, r.arguments): _result(r) for r in records}
        self._running: dict[tuple, concurrent.futures.Future] = {}
        self.real_calls = 0
        self.replayed = 0

    def call(self, server: str, tool: str, arguments, call_id: str = "", timeout_s: float = DEFAULT_TIMEOUT_S,
             live: bool | None = None) -> concurrent.futures.Future:
        """The result of a call for `call_id`: recorded (replayed) if this group has it, else run (once). `live`
        overrides the store's mode for this call."""
        key = (server, tool, canonical_arguments(arguments))
        if self.live if live is None else live:
            with self._lock:
                self.real_calls += 1
            return self._track(key, self.hub.call(server, tool, arguments, call_id, timeout_s), call_id)
        with self._lock:
            if key in self._done:
                self.replayed += 1
                return _done(self._done[key].for_call(call_id, replayed=True))
            first = self._running.get(key)
            leads = first is None
            if leads:
                self.real_calls += 1
                first = self.hub.call(server, tool, arguments, call_id, timeout_s)
                self._running[key] = first
            else:
                self.replayed += 1
        if leads:  # outside the lock: a call already answered records itself at once, under the same lock
            return self._track(key, first, call_id)
        out: concurrent.futures.Future = concurrent.futures.Future()

        def follow(done: concurrent.futures.Future) -> None:
            if done.cancelled():  # the first caller gave up: this one calls for itself
                again = self.call(server, tool, arguments, call_id, timeout_s)
                again.add_done_callback(lambda f: _copy(f, out))
                return
            out.set_result(done.result().for_call(call_id, replayed=True))
        first.add_done_callback(follow)
        return out

    def _track(self, key: tuple, future: concurrent.futures.Future, call_id: str) -> concurrent.futures.Future:
        def recorded(done: concurrent.futures.Future) -> None:
            with self._lock:
                if self._running.get(key) is done:
                    del self._running[key]
                if not done.cancelled() and done.exception() is None and done.result().origin == "tool":
                    self._done.setdefault(key, done.result())
        future.add_done_callback(recorded)
        return future

    def recorded(self, server: str, tool: str, arguments) -> ToolResult | None:
        with self._lock:
            return self._done.get((server, tool, canonical_arguments(arguments)))

    def records(self) -> list[RecordedCall]:
        """Every recorded answer, for the session file."""
        with self._lock:
            return [_record(r) for r in self._done.values()]

    def forget(self) -> None:
        """Drop the recordings: the next call of each runs again."""
        with self._lock:
            self._done.clear()


def _done(result: ToolResult) -> concurrent.futures.Future:
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_result(result)
    return future


def _copy(source: concurrent.futures.Future, target: concurrent.futures.Future) -> None:
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())


__all__ = ["RecordedCall", "ReplayStore", "error_result"]
