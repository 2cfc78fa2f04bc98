"""SessionRunner: the one place runs are submitted and their step events folded into results.

The window, `run` and `eval` all drive it. Backends call `feed(event)` from their own threads (engine, HTTP
workers); the owning thread calls `pump()` to apply what arrived — the GUI thread a few times a second, the CLI
whenever `wait()` returns — so results, which are evented model objects, only ever change on one thread. Live
figures come from step times (the clock of `RequestHandle.t_submit`), final ones from the Completion; a live wait
and TTFT start from the moments the Completion's do (when a state began: `StepEvent.since`), so they do not jump
when the run ends. The runner never touches a widget and keeps no copy of streamed text: that lives in each run's
PaneResult.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from psygnal import Signal, SignalGroup

from app.backends.base import Backend
from app.backends.image_parts import count_media
from app.engine import Completion, GenerationRequest, RequestHandle, StepEvent
from app.engine.chat.template.reasoning import split_prefix
from app.session import versions
from app.session.conversation import commit_run, plan_run, record_reply
from app.session.output_format import format_applied
from app.session.state import PaneResult, PaneSpec, RunState
from app.session.vision import vision_problem


class AlreadyRunning(ValueError):
    """The pane's previous run has not ended."""


class Submitter(Protocol):
    """Where requests go: a backend by the name a pane stores (app.backends.registry.BackendRegistry, the one
    name→backend lookup of the window, `run` and `eval`). `get` is asked only for a backend's capabilities."""

    def submit(self, request: GenerationRequest, backend: str) -> RequestHandle: ...

    def get(self, backend: str) -> Backend | None: ...


@dataclass
class _Run:
    handle: RequestHandle
    result: PaneResult
    pane: PaneSpec | None
    on_finish: Callable[[PaneResult, Completion], None] | None


class _Update:
    """What several steps changed for one request, merged, then applied to its result in one go."""

    def __init__(self):
        self.last_state = None
        self.started_at: float | None = None  # when it first left the queue
        self.generating_at: float | None = None  # when its first token was sampled (what TTFT measures)
        self.deltas: list[str] = []
        self.first_delta_at: float | None = None
        self.last_delta_at: float | None = None
        self.tokens: int | None = None
        self.logprobs: list = []
        self.reasoning: list[str] = []
        self.tool_calls: tuple | None = None  # all the request's calls so far, when they grew (StepEvent.tool_calls)

    def state(self, state, time: float, since: dict | None = None) -> None:
        """`since`: each state the request entered in that step, and when (a step can admit a request and
        sample its first token); without it, `state` began at `time`."""
        self.last_state = state
        marks = since or {state: time}
        left = [t for s, t in marks.items() if s.value != "queued"]
        if left and self.started_at is None:
            self.started_at = min(left)
        if self.generating_at is None:
            self.generating_at = next((t for s, t in marks.items() if s.value == "generating"), None)

    def text(self, delta: str, time: float) -> None:
        self.deltas.append(delta)
        self.first_delta_at = self.first_delta_at if self.first_delta_at is not None else time
        self.last_delta_at = time

    def apply_to(self, result: PaneResult, final: bool) -> None:
        """Live figures, as one change (`PaneResult.stream`); a run that ended in these steps keeps its text and
        counts for `finish` to set."""
        figures: dict = {}
        if self.started_at is not None and result.queue_wait_s is None and result.t_submit is not None:
            figures["queue_wait_s"] = self.started_at - result.t_submit
        t_first, t_last = result.t_first, result.t_last
        if t_first is None and (self.generating_at is not None or self.deltas):
            t_first = figures["t_first"] = self.generating_at if self.generating_at is not None else self.first_delta_at
            figures["ttft_s"] = t_first - result.t_submit if result.t_submit is not None else None
        if self.deltas:
            t_last = figures["t_last"] = self.last_delta_at
        if self.tokens is not None:
            if self.tokens > 1 and t_first is not None and t_last is not None and t_last > t_first:
                figures["decode_tps"] = (self.tokens - 1) / (t_last - t_first)
            figures["generated_tokens"] = self.tokens
        if self.logprobs and result.token_logprobs is not None:
            figures["token_logprobs"] = [*result.token_logprobs, *self.logprobs]
        if self.tool_calls is not None and not final:  # calls as they stream: cards fill in while the reply runs
            figures["tool_calls"] = [dict(c) for c in self.tool_calls]
        result.stream(text=result.text + "".join(self.deltas) if self.deltas else None,
                      reasoning=result.reasoning + "".join(self.reasoning) if self.reasoning else None,
                      state=RunState(self.last_state.value) if self.last_state is not None and not final else None,
                      **figures)


class RunnerEvents(SignalGroup):
    started = Signal(object, object)
    """A run was submitted: (pane or None, its PaneResult)."""
    ended = Signal(object, object)
    """A run ended (its result holds the final figures): (pane or None, PaneResult)."""
    idle = Signal()
    """The last running request ended: nothing is queued or generating any more."""


class SessionRunner:
    def __init__(self, backends: Submitter, notify: Callable[[], None] | None = None):
        """`notify()` is called (from a backend thread) when events arrive while none were waiting: the owner
        then calls `pump()` on its own thread (the GUI wakes a timer; the CLI uses `wait()` instead)."""
        self.backends = backends
        self.events = RunnerEvents()
        self._notify = notify
        self._runs: dict[int, _Run] = {}
        self._inbox: deque[StepEvent] = deque()
        self._calls: deque[Callable[[], None]] = deque()
        self._arrived = threading.Condition()
        # tool definitions a pane offers beside its JSON ones (its MCP servers': app/session/mcp_tools.py)
        self.extra_tools: Callable[[PaneSpec], list[dict]] | None = None

    # --- submitting (owning thread) --------------------------------------------------------------------------
    def run(self, pane: PaneSpec, use_draft: bool = True) -> RequestHandle:
        """Submit the pane's next turn (`use_draft=False`: regenerate the last reply, keep the draft).
        Raises ValueError/RuntimeError with a message; the pane is unchanged then."""
        if self.busy(pane):
            raise AlreadyRunning("This pane is still running.")
        request, turns = plan_run(pane, use_draft, self.extra_tools(pane) if self.extra_tools else ())
        problem = count_media(request) and vision_problem(request, self.backends.get(pane.backend))
        if problem:
            raise ValueError(f"{pane.label}: {problem}")
        handle = self.backends.submit(request, pane.backend)
        versions.keep_unversioned(pane)  # a reply from before versions existed is not dropped either
        prefix = commit_run(pane, turns, use_draft)
        answer, thought = split_prefix(prefix)  # a prefix that opens <think> starts the thinking, not the answer
        result = PaneResult(state=RunState.QUEUED, t_submit=handle.t_submit, text=answer, reasoning=thought,
                            reply_prefix=prefix, token_logprobs=[] if request.logprobs else None)
        versions.begin(pane, list(request.messages or ()), result)  # the reply it replaces stays current till it ends
        pane.result = result
        self._track(handle, pane.result, pane, None)
        return handle

    def submit(self, request: GenerationRequest, backend: str, result: PaneResult,
               on_finish: Callable[[PaneResult, Completion], None] | None = None) -> RequestHandle:
        """Submit any request (an evaluation cell, a judge, a JSONL line); `result` is filled live and
        `on_finish(result, completion)` runs on the owning thread when it ends. Raises like Backend.submit, and
        ValueError for images or clips sent to a local model that cannot take them."""
        problem = count_media(request) and vision_problem(request, self.backends.get(backend))
        if problem:
            raise ValueError(problem)
        handle = self.backends.submit(request, backend)
        result.state, result.t_submit = RunState.QUEUED, handle.t_submit
        result.token_logprobs = [] if request.logprobs else None
        self._track(handle, result, None, on_finish)
        return handle

    def _track(self, handle: RequestHandle, result: PaneResult, pane: PaneSpec | None, on_finish) -> None:
        self._runs[handle.id] = _Run(handle, result, pane, on_finish)
        self.events.started.emit(pane, result)

    def fail(self, pane: PaneSpec, message: str) -> None:
        """A run that could not start (its model did not load, or cannot fit in memory): the pane's result
        becomes an error saying `message`; its conversation and draft stay as they were, for a later run."""
        pane.result = PaneResult(state=RunState.ERROR, finish_reason="error", error=message)
        self.events.ended.emit(pane, pane.result)

    def busy(self, pane: PaneSpec) -> bool:
        return any(run.pane is pane for run in self._runs.values())

    def cancel(self, pane: PaneSpec) -> None:
        for run in list(self._runs.values()):
            if run.pane is pane:
                run.handle.cancel()

    def cancel_all(self) -> None:
        for run in list(self._runs.values()):
            run.handle.cancel()

    def forget(self, pane: PaneSpec) -> None:
        """A pane is going away: cancel its run and never report on it again."""
        for request_id, run in list(self._runs.items()):
            if run.pane is pane:
                run.handle.cancel()
                del self._runs[request_id]

    @property
    def active(self) -> int:
        return len(self._runs)

    # --- events in (any thread) and applied (owning thread) ---------------------------------------------------
    def feed(self, event: StepEvent) -> None:
        """Safe from any thread: queue a backend's step event for the next `pump()`."""
        self._queue(self._inbox, event)

    def post(self, call: Callable[[], None]) -> None:
        """Safe from any thread: run `call` on the owning thread at the next `pump()` (work done elsewhere, such
        as a code check, hands its result back so)."""
        self._queue(self._calls, call)

    def _queue(self, queue: deque, item) -> None:
        with self._arrived:
            first = not self._inbox and not self._calls
            queue.append(item)
            self._arrived.notify_all()
        if first and self._notify is not None:
            self._notify()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until events are waiting to be pumped (True) or the timeout passes (False)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: bool(self._inbox) or bool(self._calls), timeout)

    def pump(self) -> list[PaneResult]:
        """Apply every queued event, merged: each run's result changes once per pump however many steps
        arrived (the window pumps a few times a second), then run what was posted. Returns the results whose
        run ended."""
        with self._arrived:
            events, self._inbox = list(self._inbox), deque()
            calls, self._calls = list(self._calls), deque()
        ended = self.apply(*events) if events else []
        for call in calls:
            call()
        return ended

    def apply(self, *events: StepEvent) -> list[PaneResult]:
        """Fold steps into the results (owning thread); returns the results whose run ended in them."""
        updates: dict[int, _Update] = {}
        finished: list[Completion] = []
        for event in events:  # a request gets no events after the one that finishes it
            for request_id, state in event.states.items():
                updates.setdefault(request_id, _Update()).state(state, event.time, event.since.get(request_id))
            for request_id, delta in event.deltas.items():
                updates.setdefault(request_id, _Update()).text(delta, event.time)
            for request_id, thought in event.reasoning.items():
                updates.setdefault(request_id, _Update()).reasoning.append(thought)
            for request_id, count in event.tokens.items():
                updates.setdefault(request_id, _Update()).tokens = count
            for request_id, entries in event.logprobs.items():
                updates.setdefault(request_id, _Update()).logprobs += entries
            for request_id, calls in event.tool_calls.items():
                updates.setdefault(request_id, _Update()).tool_calls = calls
            finished += event.finished
        done = {c.request_id for c in finished}
        for request_id, update in updates.items():
            if run := self._runs.get(request_id):
                update.apply_to(run.result, final=request_id in done)
        ended = [self._end(c) for c in finished if c.request_id in self._runs]
        if ended and not self._runs:
            self.events.idle.emit()
        return ended

    def _end(self, completion: Completion) -> PaneResult:
        run = self._runs.pop(completion.request_id)
        pane, result = run.pane, run.result
        if pane is not None:
            if completion.finish_reason != "error":
                result.format_note = pane.output_format.check_output(
                    result.reply_prefix + completion.text, completion.finish_reason, format_applied(completion))
            result.finish(completion)
            record_reply(pane)
            versions.end(pane, result)
        else:
            result.finish(completion)
        if run.on_finish is not None:
            run.on_finish(result, completion)
        self.events.ended.emit(pane, result)
        return result
