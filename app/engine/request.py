"""A submitted request as callers see it (RequestHandle) and as the engine thread tracks it (Sequence).

The handle is the only part touched from other threads: text chunks and the completion are published to it
under a condition variable; everything else in a Sequence belongs to the engine thread.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from app.engine.chat.parse.stream import CUT_REASONS, ToolStream, call_dicts
from app.engine.chat.template.reasoning import ReasoningSplit
from app.engine.sampling.chain import SamplerChain
from app.engine.sampling_params import HISTORY_FIELDS, SamplingParams
from app.engine.text import TextStream
from app.engine.types import (
    CUT_CALL,
    TOOLS_AS_TEXT,
    Completion,
    GenerationRequest,
    RequestState,
    final_state,
)

_request_ids = itertools.count(1)


def next_request_id() -> int:
    """A request id no other request of this process has, whichever backend makes it: every backend (each
    engine, each server connection) draws its handles' ids from this one counter, so one runner can hold runs of
    any number of backends at once, keyed by id. Thread-safe (itertools.count is atomic under the GIL)."""
    return next(_request_ids)


class RequestHandle:
    """What `Engine.submit()` returns: stream text, wait for the completion, or cancel."""

    def __init__(self, request_id: int, request: GenerationRequest, on_cancel: Callable[[int], None]):
        self.id = request_id
        self.request = request
        self._on_cancel = on_cancel
        self._cond = threading.Condition()
        self._chunks: list[str] = []
        self._completion: Completion | None = None
        self._state = RequestState.QUEUED
        self.t_submit = time.perf_counter()  # the clock of StepEvent.time and of the Completion's timings

    @property
    def state(self) -> RequestState:
        """Where the request is now; written by the engine thread, readable from any thread."""
        with self._cond:
            return self._state

    @state.setter
    def state(self, value: RequestState) -> None:
        with self._cond:
            if self._completion is None:  # a finished request's state never changes again
                self._state = value

    def stream(self, timeout: float | None = None) -> Iterator[str]:
        """Text deltas as they arrive; ends when the request ends. `timeout` bounds each wait."""
        index = 0
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda i=index: i < len(self._chunks) or self._completion, timeout):
                    raise TimeoutError(f"request {self.id}: no text within {timeout} s")
                chunks, finished = self._chunks[index:], self._completion is not None
            index += len(chunks)
            yield from chunks
            if finished and index >= len(self._chunks):
                return

    def result(self, timeout: float | None = None) -> Completion:
        with self._cond:
            if not self._cond.wait_for(lambda: self._completion is not None, timeout):
                raise TimeoutError(f"request {self.id} did not finish within {timeout} s")
            return self._completion

    def done(self) -> bool:
        return self._completion is not None

    def cancel(self) -> None:
        """Safe from any thread, at any time, any number of times."""
        if self._completion is None:
            self._on_cancel(self.id)

    # --- engine thread side --------------------------------------------------------------------------------
    def _publish(self, delta: str) -> None:
        with self._cond:
            self._chunks.append(delta)
            self._cond.notify_all()

    def _complete(self, completion: Completion) -> None:
        with self._cond:
            self._completion = completion
            self._state = final_state(completion.finish_reason)
            self._cond.notify_all()


class Sequence:
    """Engine-thread state of one request: its slot, prompt progress, sampler and timings."""

    def __init__(self, handle: RequestHandle):
        self.handle = handle
        self.request = handle.request
        self.id = handle.id
        self.finished = False  # set once by Engine._finish; a request never ends twice
        self.slot: int | None = None
        self.prompt: list[int] = []
        self.n_prompt_done = 0  # prompt tokens already in the KV cache
        self.n_past = 0  # next KV position
        self.pending_token: int | None = None  # sampled, not yet decoded
        self.generated: list[int] = []
        self.sampler: SamplerChain | None = None
        self.text = TextStream(tuple(self.request.stop))
        self.split = ReasoningSplit(enabled=False)  # replaced at admission, when the prompt is known
        self.tools: ToolStream | None = None  # parses the answer for tool calls (a request with tools)
        self.spec = None  # a SpecState (speculative/drafts.py) while the request drafts tokens; set at admission
        self.forced: list[int] = []  # tokens to emit instead of sampling (a spent thinking budget closes the block)
        # Prefix sharing (engine thread only; docs/engine.md "Slots as a prompt cache"):
        self.cached_tokens = 0  # prompt tokens whose KV was reused or copied instead of prefilled
        self.prompt_logits = None  # logits after the whole prompt, kept for the prompt cache
        self.ready_logits = None  # set when the whole prompt came from the cache: sample from these first
        self.donor: Sequence | None = None  # a running sequence whose prompt KV this one waits to copy
        self.share = 0  # how many of the donor's prompt tokens it will copy
        self.leader: Sequence | None = None  # set on a coalesced follower: the sequence that decodes for it
        self.followers: list[Sequence] = []
        self._key: str | None = None
        self.token_logprobs: list | None = [] if self.request.logprobs else None
        self.t_submit = handle.t_submit
        self.t_admit: float | None = None
        self.t_first: float | None = None
        self.t_last: float | None = None
        self.t_answer: float | None = None  # when the answer's first text was published
        # PositionMap (vision/positions.py) of an M-RoPE prompt with images; None: position = index
        self.positions = None
        self.media = None  # its media read before it queued (vision/prepare.py: a video's frames), or None

    @property
    def state(self) -> RequestState:
        return self.handle.state

    @state.setter
    def state(self, value: RequestState) -> None:
        self.handle.state = value

    @property
    def coalesce_key(self) -> str | None:
        """Equal keys decode equal tokens: same request in everything that decides them, and deterministic
        (greedy, or seeded). None when the request's tokens are random."""
        sampling = self.request.sampling
        if not (sampling.greedy or sampling.seed is not None):
            return None
        if self._key is None:
            request = self.request
            if sampling.greedy:  # only the penalties (DRY's too) shape a greedy pick: seeds and top-k/p cannot
                kept = {k: getattr(sampling, k) for k in HISTORY_FIELDS}
                request = dataclasses.replace(request, sampling=SamplingParams(temperature=0.0, **kept))
            request = dataclasses.replace(request, speculative=None)  # lossless: it never changes the tokens
            self._key = repr(request)  # every field of the frozen dataclass, new ones included
        return self._key

    def kv_tokens(self):
        """The tokens at KV positions 0..n_past-1: the prompt so far, then the decoded part of the reply."""
        if self.n_prompt_done < len(self.prompt):
            return self.prompt[:self.n_prompt_done]
        return np.concatenate([self.prompt, np.asarray(self.generated[:self.n_past - len(self.prompt)],
                                                       dtype=np.int32)])

    def position(self, index: int) -> int:
        """The KV position of the token at `index` (prompt, then reply): the index itself unless M-RoPE images
        before it take fewer positions than tokens (vision/positions.py)."""
        return index if self.positions is None else self.positions.position(index)

    def boundary(self, index: int) -> int:
        """`index`, or the start of the M-RoPE image it falls inside: where this sequence's KV can be cut."""
        return index if self.positions is None else self.positions.boundary(index)

    def kv_end(self) -> int:
        """The next position llama.cpp reports for this sequence's KV (its largest position + 1)."""
        return self.n_past if self.positions is None else self.positions.kv_end(self.n_past)

    @property
    def prompt_remaining(self) -> int:
        return len(self.prompt) - self.n_prompt_done

    @property
    def text_ready(self) -> int:
        """Prompt tokens left before the next image placeholder (vision/projector.py), or all that are left if
        none."""
        rest = np.asarray(self.prompt[self.n_prompt_done:])
        images = np.flatnonzero(rest < 0)
        return int(images[0]) if len(images) else len(rest)

    @property
    def has_images(self) -> bool:
        """Whether its prompt holds image placeholders (vision/projector.py): its text is paced as its image pieces
        are."""
        return bool(np.any(np.asarray(self.prompt) < 0))

    def completion(self, reason: str, error: str | None = None, error_kind: str | None = None) -> Completion:
        n = len(self.generated)
        decode_tps = None
        if self.t_first is not None and self.t_last is not None and n > 1 and self.t_last > self.t_first:
            decode_tps = (n - 1) / (self.t_last - self.t_first)
        text, calls, dropped = self.split.answer, (), 0
        if self.tools is not None:  # the answer parsed as llama.cpp parses it: the calls out of the content
            cut = reason in CUT_REASONS  # its complete calls are kept, the one cut off is dropped
            text, calls = self.tools.final_content(cut), call_dicts(self.tools.final(cut).tool_calls, self.id)
            dropped = self.tools.dropped_at_cut(cut)
            if calls and reason == "stop":
                reason = "tool_calls"
        return Completion(
            request_id=self.id,
            text=text,
            token_ids=list(self.generated),
            finish_reason=reason,
            error=error,
            prompt_tokens=len(self.prompt),
            generated_tokens=n,
            queue_wait_s=None if self.t_admit is None else self.t_admit - self.t_submit,
            ttft_s=None if self.t_first is None else self.t_first - self.t_submit,
            decode_tps=decode_tps,
            error_kind=error_kind if error else None,
            cached_tokens=self.cached_tokens,
            token_logprobs=None if self.token_logprobs is None else list(self.token_logprobs),
            reasoning_text=self.split.reasoning_text,
            reasoning_tokens=self.split.tokens,
            answer_ttft_s=None if self.t_answer is None else self.t_answer - self.t_submit,
            drafted_tokens=self.spec.drafted if self.spec else 0,
            accepted_tokens=self.spec.accepted if self.spec else 0,
            note="; ".join(n for n in (self.spec.note if self.spec else "",
                                       TOOLS_AS_TEXT if self.request.tools and self.tools is None else "",
                                       CUT_CALL if dropped else "") if n),
            tool_calls=calls,
        )
