"""Collects what one engine step changed into a single StepEvent.

One event per step, not per token: a subscriber (the GUI bridge) pays per step, however many panes stream.
A request's state changes only through `enter`, which also records it for the step's event. The engine admits
prompts at the end of a step, so the step's event says which prompts the next step decodes before it decodes
them; and `Engine.stats()` counts the states the delivered events carried, so a subscriber's states and the
stats are one fact.
"""

from __future__ import annotations

import time

from app.engine.types import Completion, RequestState, StepEvent


class EventBuilder:
    def __init__(self, step: int):
        self._step = step
        self._deltas: dict[int, str] = {}
        self._states: dict[int, RequestState] = {}
        self._since: dict[int, dict[RequestState, float]] = {}
        self._finished: list[Completion] = []
        self._tokens: dict[int, int] = {}
        self._logprobs: dict[int, list] = {}
        self._reasoning: dict[int, str] = {}
        self._tool_calls: dict[int, tuple] = {}

    def delta(self, request_id: int, text: str) -> None:
        self._deltas[request_id] = self._deltas.get(request_id, "") + text

    def reasoning(self, request_id: int, text: str) -> None:
        self._reasoning[request_id] = self._reasoning.get(request_id, "") + text

    def tool_calls(self, request_id: int, calls: tuple) -> None:
        self._tool_calls[request_id] = calls

    def tokens(self, request_id: int, count: int) -> None:
        self._tokens[request_id] = count

    def logprobs(self, request_id: int, entries: list) -> None:
        self._logprobs.setdefault(request_id, []).extend(entries)

    def enter(self, seq, state: RequestState, at: float | None = None) -> None:
        """The request (a request.Sequence) enters `state` at `at` (time.perf_counter(); default now): its handle
        says so from now on (what `Engine.stats()` counts) and this step's event tells the subscribers. `at` is
        the moment its Completion's timings use, so a live figure matches the final one."""
        seq.state = state
        self._states[seq.id] = state
        self._since.setdefault(seq.id, {})[state] = time.perf_counter() if at is None else at

    def finished(self, completion: Completion, state: RequestState) -> None:
        self._finished.append(completion)
        self._states[completion.request_id] = state

    def build(self) -> StepEvent | None:
        if not (self._deltas or self._states or self._finished or self._reasoning or self._tool_calls):
            return None
        return StepEvent(step=self._step, deltas=self._deltas, states=self._states, finished=self._finished,
                         tokens=self._tokens, time=time.perf_counter(), logprobs=self._logprobs,
                         reasoning=self._reasoning, since=self._since, tool_calls=self._tool_calls)
