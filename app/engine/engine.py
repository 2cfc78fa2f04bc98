"""The continuous-batching engine: one thread, one llama_context, one llama_decode per step for every sequence.

Other threads only touch the waiting queue, the cancel set and the subscriber list (under one condition
variable); the engine thread owns the model, context, batch, samplers and running sequences, and is the only one
that calls llama.cpp or frees anything. Every submitted request ends exactly once (`_finish` is idempotent),
whatever fails: the failure semantics are in docs/engine.md ("Failures").
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from app.engine.context import LlamaContext
from app.engine.events import EventBuilder
from app.engine.native import LlamaModel
from app.engine.prompt import ContextOverflow, PromptError, PromptRenderer
from app.engine.request import RequestHandle, Sequence
from app.engine.sampling import SamplerChain
from app.engine.scheduler import PrefillPacer
from app.engine.stats import StatsRecorder
from app.engine.step import StepExecution
from app.engine.types import EngineConfig, GenerationRequest, RequestState, StatsSnapshot, StepEvent

log = logging.getLogger("chorus.engine")
# Process-wide, so ids stay unique when an app replaces one engine with another.
_request_ids = itertools.count(1)


class Engine(StepExecution):
    """Load a model, start the engine thread; `submit()` from any thread. Use as a context manager."""

    def __init__(self, config: EngineConfig):
        self.config = config
        self._model = LlamaModel(config.model_path)  # raises a readable error for a bad file
        try:
            self._ctx = LlamaContext(self._model, config)
            self._renderer = PromptRenderer(self._model, config.chat_format)
        except BaseException:
            if getattr(self, "_ctx", None):
                self._ctx.close()
            self._model.close()
            raise
        self.model_info = dataclasses.replace(self._model.info(), chat_format=self._renderer.label,
                                              chat_format_note=self._renderer.note)
        limits = [config.n_ctx_per_slot, self._ctx.n_ctx_seq] + ([self._model.n_ctx_train]
                                                                  if self._model.n_ctx_train > 0 else [])
        self.n_ctx_per_slot = min(limits)
        self._decode = self._ctx.decode  # one seam, so tests can inject llama_decode failures
        self._cond = threading.Condition()
        self._waiting: deque[Sequence] = deque()
        self._live: dict[int, Sequence] = {}
        self._cancel_ids: set[int] = set()
        self._closing = False
        self._admitting: Sequence | None = None
        self._running: list[Sequence] = []
        self._free_slots = set(range(config.n_slots))
        self._subscribers: tuple[Callable[[StepEvent], None], ...] = ()  # replaced whole, under _cond
        self._kv_positions = [0] * config.n_slots  # written by the engine thread after every iteration
        self._idle = threading.Event()  # set after an iteration that left nothing waiting or running
        self._idle.set()
        self._steps = 0
        self._stats = StatsRecorder(config.n_slots, self.n_ctx_per_slot)
        self._pacer = PrefillPacer(config)
        self._thread = threading.Thread(target=self._run, name="chorus-engine", daemon=True)
        self._thread.start()

    # --- public API (any thread) -----------------------------------------------------------------------
    def submit(self, request: GenerationRequest) -> RequestHandle:
        with self._cond:
            if self._closing:
                raise RuntimeError("the engine is closed")
            handle = RequestHandle(next(_request_ids), request, self._request_cancel)
            seq = Sequence(handle)
            self._idle.clear()
            self._waiting.append(seq)
            self._live[seq.id] = seq
            self._cond.notify()
        return handle

    def cancel_all(self) -> None:
        with self._cond:
            self._cancel_ids.update(self._live)
            self._cond.notify()

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]:
        """`fn(event)` runs on the engine thread once per step that changed anything. Returns an idempotent
        unsubscribe; both are safe from any thread (a step already under way may still call `fn` once)."""
        with self._cond:
            self._subscribers = (*self._subscribers, fn)

        def unsubscribe() -> None:
            with self._cond:
                self._subscribers = tuple(f for f in self._subscribers if f is not fn)

        return unsubscribe

    def stats(self) -> StatsSnapshot:
        """Counters as of the last step; `active` and `queued` as of now (live requests, under the lock)."""
        snap = self._stats.snapshot()
        with self._cond:
            queued = len(self._waiting)
            active = len(self._live) - queued
        return dataclasses.replace(snap, queued=queued, active=active)

    def kv_positions(self) -> list[int]:
        """Next KV position per slot (0 = empty), as llama.cpp reported it to the engine thread at the end of
        its last iteration. Safe from any thread and after close (it never calls llama.cpp itself)."""
        return list(self._kv_positions)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every submitted request has ended and the engine thread has settled (KV snapshot and
        stats written). Returns False on timeout."""
        return self._idle.wait(timeout)

    def reset_stats(self) -> None:
        self._stats.reset()

    @property
    def closed(self) -> bool:
        return self._closing and not self._thread.is_alive()

    def close(self, timeout: float | None = 2.0) -> bool:
        """Cancel everything and stop the thread, waiting at most `timeout` seconds (None: until it ends).
        Returns whether it ended; if not, it ends after its current step and frees everything then."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("engine thread still in a step after %s s; it frees the model when the step ends", timeout)
            return False
        return True

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request_cancel(self, request_id: int) -> None:
        with self._cond:
            if request_id in self._live:
                self._cancel_ids.add(request_id)
                self._cond.notify()

    # --- engine thread -----------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._closing or self._waiting or self._running
                                        or self._cancel_ids)
                    closing = self._closing
                    cancels = set(self._live) if closing else self._cancel_ids
                    self._cancel_ids = set()
                events = EventBuilder(self._steps)
                try:
                    self._apply_cancels(cancels, events)
                    if not closing:
                        self._admit(events)
                        if self._running:
                            self._step(events)
                except Exception as exc:  # a bug must not kill the thread: end what the step touched
                    log.exception("engine step failed")
                    self._fail_running(events, f"internal engine error: {exc!r}")
                self._publish(events)
                self._snapshot_kv()
                with self._cond:
                    if not (self._waiting or self._running or self._admitting):
                        self._idle.set()
                if closing:
                    return
        except BaseException:
            log.exception("engine thread failed")
            raise
        finally:
            self._release_native()

    def _fail_running(self, events: EventBuilder, message: str) -> None:
        """End every admitted request (queued ones stay queued and are served next)."""
        for seq in list(self._running) + ([self._admitting] if self._admitting else []):
            try:
                self._finish(seq, "error", events, message)
            except Exception:
                log.exception("could not end request %s cleanly", seq.id)
        self._admitting = None

    def _snapshot_kv(self) -> None:
        self._kv_positions = [self._ctx.next_position(slot) for slot in range(self.config.n_slots)]

    def _apply_cancels(self, ids: set[int], events: EventBuilder) -> None:
        for request_id in ids:
            with self._cond:
                seq = self._live.get(request_id)
            if seq is not None:
                self._finish(seq, "cancelled", events)

    def _admit(self, events: EventBuilder) -> None:
        while self._free_slots:
            with self._cond:
                if not self._waiting:
                    return
                seq = self._waiting.popleft()
                cancelled = seq.id in self._cancel_ids
                self._cancel_ids.discard(seq.id)
            if cancelled:  # a queued request cancelled is never admitted
                self._finish(seq, "cancelled", events)
                continue
            self._admitting = seq  # until it is in _running, a fault here must still end it
            try:
                self._admit_one(seq, events)
            except ContextOverflow as exc:
                self._finish(seq, "error", events, str(exc), kind="context")
            except PromptError as exc:
                self._finish(seq, "error", events, str(exc), kind="prompt")
            except Exception as exc:
                log.exception("admitting request %s failed", seq.id)
                self._finish(seq, "error", events, f"internal engine error while admitting: {exc!r}")
            self._admitting = None

    def _admit_one(self, seq: Sequence, events: EventBuilder) -> None:
        prompt = self._renderer.tokens(seq.request)
        seq.prompt = np.asarray(prompt, dtype=np.int32)
        if len(prompt) >= self.n_ctx_per_slot:
            raise ContextOverflow(f"the prompt is {len(prompt)} tokens but a slot holds {self.n_ctx_per_slot} "
                                  "(prompt plus reply): shorten it or raise the context per slot")
        seq.slot = min(self._free_slots)  # lowest id keeps active seq ids contiguous: fewer ubatches
        self._free_slots.discard(seq.slot)
        self._ctx.clear_sequence(seq.slot)
        banned = self._model.eog_ids if seq.request.ignore_eos else ()
        seq.sampler = SamplerChain(seq.request.sampling, self._model.n_vocab, banned)
        seq.sampler.accept_prompt(prompt)
        seq.t_admit = time.perf_counter()
        seq.state = RequestState.PREFILLING
        events.state(seq.id, RequestState.PREFILLING)
        self._running.append(seq)

    def _finish(self, seq: Sequence, reason: str, events: EventBuilder, error: str | None = None,
                kind: str = "internal") -> None:
        """End a request exactly once, wherever it is (waiting, admitting, running); later calls do nothing."""
        if seq.finished:
            return
        seq.finished = True
        try:
            if seq in self._running:
                self._running.remove(seq)
            if seq.slot is not None and seq.slot not in self._free_slots:
                self._free_slots.add(seq.slot)
                self._ctx.clear_sequence(seq.slot)
            if seq.sampler is not None:
                seq.sampler.free()
                seq.sampler = None
            self._emit(seq, seq.text.finish(), events)
        finally:  # whatever failed above, the caller gets its completion and the request leaves every queue
            completion = seq.completion(reason, error, kind)
            seq.handle._complete(completion)
            events.finished(completion, seq.handle.state)
            with self._cond:
                self._live.pop(seq.id, None)
                self._cancel_ids.discard(seq.id)
                if seq.slot is None and seq in self._waiting:
                    self._waiting.remove(seq)
            self._stats.record_tokens(generated=0, completed=1)

    def _publish(self, events: EventBuilder) -> None:
        event = events.build()
        if event is None:
            return
        with self._cond:
            subscribers = self._subscribers
        for fn in subscribers:
            try:
                fn(event)
            except Exception:
                log.exception("step subscriber %r failed", fn)

    def _release_native(self) -> None:
        for seq in list(self._running):
            if seq.sampler is not None:
                seq.sampler.free()
        self._running.clear()
        self._ctx.close()
        self._model.close()
