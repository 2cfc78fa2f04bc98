"""The continuous-batching engine: one thread, one llama_context, one llama_decode per step for every sequence.

Other threads only touch the waiting queue, the cancel set and the subscriber list (under one condition
variable); the engine thread owns the model, context, batch, samplers, running sequences and the prompt cache,
and is the only one that calls llama.cpp or frees anything.

`Engine` is the public API and a request's life on the engine thread: the queue, cancellation, and
its one and only end (`_finish` is idempotent: every submitted request ends exactly once wherever it is:
queued, being admitted, running, or following an identical request; docs/engine.md has the failure
semantics). It is composed of objects that own the rest:
- `Admission` (admission.py): a queued request made a running sequence (prompt, parser, samplers, slot);
- `Step` (step.py): one decode step: plan, llama_decode, sample, tokens into text;
- `PrefixSharing` (sharing/prefix.py): the prompt cache, fan-out copies, coalescing;
- `VisionStep` (vision/step.py): the image store and the image pieces of a step; `MediaWorker`
  (vision/prepare.py): a request's videos and clips decoded before it queues, off the engine thread;
- `SpeculativeStep` (speculative/step.py): the draft models, drafts and their verification;
- `ReproducibleStep` (reproducible/step.py): the split step when outputs must not depend on what else runs.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from app.engine.admission import REFUSALS, Admission, refusal_kind
from app.engine.chat.parse.stream import CUT_REASONS
from app.engine.chat.template.reasoning import CLOSING_TEXT
from app.engine.context import LlamaContext
from app.engine.core_share import CORES
from app.engine.devices import resolve_gpu_layers
from app.engine.events import EventBuilder
from app.engine.loop import Loop
from app.engine.lora import LoraAdapters
from app.engine.native import LlamaModel
from app.engine.prompt import PromptRenderer
from app.engine.reproducible.step import ReproducibleStep
from app.engine.request import RequestHandle, Sequence, next_request_id
from app.engine.sampling.grammar import check as grammar_check
from app.engine.sampling.masks import MaskBatch
from app.engine.scheduler import PrefillPacer
from app.engine.sharing.prefix import PrefixSharing
from app.engine.speculative.draft_model import DraftModelError, DraftModels
from app.engine.speculative.step import SpeculativeStep
from app.engine.stats import StatsRecorder, occupancy
from app.engine.step import Step
from app.engine.types import EngineConfig, EngineStopped, GenerationRequest, RequestState, StatsSnapshot, StepEvent
from app.engine.vision.prepare import MediaWorker
from app.engine.vision.projector import ImageStore
from app.engine.vision.step import VisionStep

_UNFINISHED = frozenset({RequestState.QUEUED, RequestState.PREFILLING, RequestState.GENERATING})
log = logging.getLogger("chorus.engine")
# Process-wide, so ids stay unique when an app replaces one engine with another.


class Engine:
    """Load a model, start the engine thread; `submit()` from any thread. Use as a context manager.

    Owns the model, its context, the prompt renderer, the queue shared with other threads (under `_cond`), the
    running sequences and free slots, the LoRA adapters, the pacer and the stats; the objects it is made of
    (the module docstring) own the rest."""

    def __init__(self, config: EngineConfig):
        self.config = config
        self.offload = resolve_gpu_layers(config)  # what a CPU build or "auto" makes of n_gpu_layers
        self._model = LlamaModel(config.model_path, self.offload.layers)  # a readable error for a bad file
        try:
            self._ctx = LlamaContext(self._model, config)
            self._renderer = PromptRenderer(self._model, config.chat_format, config.tool_format)
            # the vision projector (vision/): images in messages; None = text only
            images = ImageStore(self._model, config.mmproj, config.n_threads) if config.mmproj else None
        except BaseException:
            if getattr(self, "_ctx", None):
                self._ctx.close()
            self._model.close()  # no adapter is loaded yet: LoraAdapters comes later, and loads on first use
            raise
        self.model_info = dataclasses.replace(self._model.info(), chat_format=self._renderer.label,
                                              chat_format_note=self._renderer.note, offload=self.offload.label(),
                                              kv_type=config.kv_type, tool_format=self._renderer.tools_label)
        limits = [config.n_ctx_per_slot, self._ctx.n_ctx_seq] + ([self._model.n_ctx_train]
                                                                  if self._model.n_ctx_train > 0 else [])
        self.n_ctx_per_slot = min(limits)
        self._closing_tokens = self._model.tokenize(CLOSING_TEXT, add_special=False)  # a spent thinking budget
        self._cond = threading.Condition()
        self._waiting: deque[Sequence] = deque()
        self._reading: set[Sequence] = set()  # requests whose videos and clips the media worker reads first
        self._media = MediaWorker(images is not None and images.vision, images.sample_rate if images else 0)
        self._live: dict[int, Sequence] = {}
        self._shown: dict[int, RequestState] = {}  # each unfinished request's state as the delivered events said
        self._cancel_ids: set[int] = set()
        self._closing = False
        self._failure: str | None = None  # why the engine thread died (docs/engine.md, "Failures")
        self._native_lock = threading.Lock()  # check_grammar (any thread) vs freeing the model (engine thread)
        self._released = False
        self._admitting: Sequence | None = None
        self._running: list[Sequence] = []
        self._free_slots = set(range(config.n_slots))
        self._subscribers: tuple[Callable[[StepEvent], None], ...] = ()  # replaced whole, under _cond
        self._kv_positions = [0] * config.n_slots  # written by the engine thread after every iteration
        self._kv_expected = [0] * config.n_slots  # what the engine's own records say those positions are
        self._clear_cache = False  # clear_prompt_cache() asked, applied between steps
        self._idle = threading.Event()  # set after an iteration that left nothing waiting or running
        self._idle.set()
        self._stats = StatsRecorder(config.n_slots, self.n_ctx_per_slot)
        self._pacer = PrefillPacer(config)
        self._adapters = LoraAdapters(self._model)  # LoRA files loaded on this model (lora.py)
        loop = Loop(config, self._model, self._ctx, self._stats, self._pacer, self._adapters, self._running,
                    self._free_slots, self._finish, self.n_ctx_per_slot, id(self))
        self._step = Step(loop, MaskBatch(config.n_slots, self._model.n_vocab), self._waiting, self._fail_running,
                          self._closing_tokens)
        self._images = VisionStep(loop, images, self._renderer)
        self._sharing = PrefixSharing(loop, self._images.spend)
        # draft models of speculative kind "draft", loaded on first use (speculative/draft_model.py)
        draft_models = DraftModels(self._model, config, -1 if self.offload.on_gpu else 0)
        self._speculation = SpeculativeStep(loop, draft_models, self._step)
        self._reproducible = ReproducibleStep(loop, self._step, self._speculation, self.offload.on_gpu)
        self._step.attach(self._sharing, self._images, self._speculation, self._reproducible)
        self._admission = Admission(loop, self._renderer, self._images, self._sharing, self._speculation,
                                    self._closing_tokens)
        self._thread = threading.Thread(target=self._run, name="chorus-engine", daemon=True)
        self._thread.start()

    # --- public API (any thread) -----------------------------------------------------------------------
    def submit(self, request: GenerationRequest) -> RequestHandle:
        """Queue a request; raises EngineStopped once the engine is closed or its thread has died."""
        with self._cond:
            if self._failure is not None:
                raise EngineStopped(f"the engine stopped: {self._failure}. Reload the model to go on.")
            if self._closing:
                raise EngineStopped("the engine is closed")
            handle = RequestHandle(next_request_id(), request, self._request_cancel)
            seq = Sequence(handle)
            self._idle.clear()
            reading = self._media.wants(request)
            (self._reading.add if reading else self._waiting.append)(seq)  # videos, clips read first (prepare.py)
            self._live[seq.id] = seq
            self._shown[seq.id] = RequestState.QUEUED
            self._cond.notify()
        if reading:
            self._media.start(seq, self._media_read)
        return handle

    def _media_read(self, seq: Sequence) -> None:
        """The worker read a request's videos and clips: it queues now, unless it ended meanwhile (cancelled,
        closed)."""
        with self._cond:
            if seq in self._reading:
                self._reading.discard(seq)
                self._waiting.append(seq)
                self._cond.notify()

    def render_prompt(self, request: GenerationRequest) -> str:
        """The exact text the request becomes before tokenization: its messages through the chat template (or
        its raw prompt; `media.MARKER` in place of each image), then its reply prefix. Safe from any thread;
        raises PromptError as a submit would end."""
        return self._images.marked_text(request) + request.reply_prefix

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
        """Counters as of the last step; `queued`, `prefilling`, `generating`, `active` and `slots_busy` as the
        last delivered event left them: the unfinished requests counted by the states the events carried to every
        subscriber (stats.occupancy), so a pane's state and these counts are one fact."""
        snap = self._stats.snapshot()
        with self._cond:
            shown = [(state, (seq := self._live.get(rid)) is not None and seq.leader is not None)
                     for rid, state in self._shown.items()]
        return dataclasses.replace(snap, **occupancy(shown), reproducible=self.config.reproducible,
                                   gpu_layers=self.offload.layers if self.offload.on_gpu else 0)

    def kv_positions(self) -> list[int]:
        """Next KV position per slot (0 = empty), as llama.cpp reported it to the engine thread at the end of
        its last iteration. Safe from any thread and after close (it never calls llama.cpp itself)."""
        return list(self._kv_positions)

    def kv_expected(self) -> list[int]:
        """Per slot, the KV length the engine's records account for (a running sequence's position, else the
        prompt cache's record), from the same snapshot as `kv_positions()`: any difference is a leak."""
        return list(self._kv_expected)

    def check_grammar(self, grammar: str | None = None, json_schema: dict | None = None) -> str | None:
        """None if the grammar or JSON schema compiles for this model, else llama.cpp's (or the converter's)
        message. Safe from any thread: it reads only the model, and once the engine is closing, closed or dead
        it says so instead of reading a model that is (or is about to be) freed."""
        with self._native_lock:
            if self._released or self._closing:
                reason = f"the engine stopped: {self._failure}" if self._failure else "the engine is closed"
                return f"cannot check the format: {reason}"
            return grammar_check(self._model, grammar, json_schema)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every submitted request has ended and the engine thread has settled (KV snapshot and
        stats written). Returns False on timeout."""
        return self._idle.wait(timeout)

    def reset_stats(self) -> None:
        self._stats.reset()

    def clear_prompt_cache(self) -> None:
        """Forget every cached prompt (the KV of free slots). Safe from any thread; applied between steps."""
        with self._cond:
            self._clear_cache = True
            self._idle.clear()  # so wait_idle() returns once it is applied
            self._cond.notify()

    @property
    def closed(self) -> bool:
        return self._closing and not self._thread.is_alive()

    @property
    def failure(self) -> str | None:
        """Why the engine thread died (its exception, in one line), or None while it has not."""
        return self._failure

    @property
    def alive(self) -> bool:
        """Whether the engine takes requests: its thread runs, it is not closing and has not failed."""
        return self._failure is None and not self._closing and self._thread.is_alive()

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
            self._loop()
        except BaseException as exc:  # outside a step's own try: the thread cannot go on
            log.exception("engine thread failed")
            self._die(f"{type(exc).__name__}: {exc}" if str(exc) else repr(exc))
        finally:
            self._release_native()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closing or self._waiting or self._running
                                    or self._cancel_ids or self._clear_cache)
                closing = self._closing
                cancels = set(self._live) if closing else self._cancel_ids
                self._cancel_ids = set()
            events = EventBuilder(self._step.count)
            try:
                self._apply_cancels(cancels, events)
                if self._clear_cache:
                    self._clear_cache = False
                    self._sharing.clear()
                if not closing:
                    if self._running:
                        self._step.run(events)
                    self._admit(events)  # the slots free now take their next prompts, and this step's event says
                    # so: a pane reads "prefilling" while the next step decodes its prompt
            except Exception as exc:  # a bug must not kill the thread: end what the step touched
                log.exception("engine step failed")
                self._fail_running(events, f"internal engine error: {exc!r}")
            self._publish(events)
            self._snapshot_kv()
            with self._cond:
                if not (self._waiting or self._running or self._admitting or self._reading):
                    CORES.idle(id(self))  # other engines may use every thread again
                    self._idle.set()
            if closing:
                return

    def _snapshot_kv(self) -> None:
        cache = self._sharing.cache
        expected = [cache.cached_end(slot) for slot in range(self.config.n_slots)]
        for seq in self._running:
            expected[seq.slot] = seq.kv_end()
        self._kv_expected = expected
        self._kv_positions = [self._ctx.next_position(slot) for slot in range(self.config.n_slots)]

    def _publish(self, events: EventBuilder) -> None:
        """Hand the step's event to every subscriber, and count its states as shown (`stats`)."""
        event = events.build()
        if event is None:
            return
        with self._cond:
            for rid, state in event.states.items():
                if state in _UNFINISHED:
                    self._shown[rid] = state
                else:
                    self._shown.pop(rid, None)
            subscribers = self._subscribers
        for fn in subscribers:
            try:
                fn(event)
            except Exception:
                log.exception("step subscriber %r failed", fn)

    def _release_native(self) -> None:
        CORES.idle(id(self))
        self._media.close()
        with self._native_lock:
            self._released = True
            self._step.masks.close()
            for seq in list(self._running):
                if seq.sampler is not None:
                    seq.sampler.free()
            self._running.clear()
            self._images.close()
            self._speculation.draft_models.close()
            self._ctx.close()
            self._model.close()

    # --- a request's life on the engine thread -------------------------------------------------------
    def _die(self, cause: str) -> None:
        """The engine thread is ending on an exception outside a step's try: record why (`Engine.failure`; from
        now on `submit()` raises EngineStopped) and end every live request, queued ones included, "error" with
        a message naming the cause. Still on the engine thread, before the model is freed."""
        message = f"the engine stopped after an internal error ({cause}); reload the model"
        with self._cond:
            self._failure = cause
            self._closing = True
            doomed = list(self._live.values())
        events = EventBuilder(self._step.count)
        for seq in doomed:
            try:
                self._finish(seq, "error", events, message)
            except Exception:  # _finish completes the handle even when its cleanup raises
                log.exception("could not end request %s cleanly", seq.id)
        try:
            self._publish(events)
        except Exception:
            log.exception("could not publish the end of the engine's requests")
        self._admitting = None
        self._idle.set()

    def _fail_running(self, events: EventBuilder, message: str) -> None:
        """End every admitted request (queued ones stay queued and are served next)."""
        for seq in list(self._running) + ([self._admitting] if self._admitting else []):
            try:
                self._finish(seq, "error", events, message)
            except Exception:
                log.exception("could not end request %s cleanly", seq.id)
        self._admitting = None

    def _apply_cancels(self, ids: set[int], events: EventBuilder) -> None:
        for request_id in ids:
            with self._cond:
                seq = self._live.get(request_id)
            if seq is not None:
                self._finish(seq, "cancelled", events)

    def _admit(self, events: EventBuilder) -> None:
        self._images.new_iteration()  # nothing spent yet on any prompt outside its pieces
        leaders = self._sharing.leaders
        if leaders:
            self._coalesce_waiting(events)
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
            if seq.coalesce_key in leaders:
                self._follow(leaders[seq.coalesce_key], seq, events)
                continue
            self._admitting = seq  # until it is in _running, a fault here must still end it
            started = time.perf_counter()
            try:
                self._admission.admit(seq, events)
                self._images.spend(seq, time.perf_counter() - started)
            except REFUSALS as exc:  # the request's own fault: its error, with the kind the caller sees
                self._finish(seq, "error", events, str(exc), kind=refusal_kind(exc))
            except Exception as exc:
                log.exception("admitting request %s failed", seq.id)
                self._finish(seq, "error", events, f"internal engine error while admitting: {exc!r}")
            self._admitting = None

    def _coalesce_waiting(self, events: EventBuilder) -> None:
        """Every queued request identical to a running one becomes its follower, slot or no slot free."""
        leaders = self._sharing.leaders
        with self._cond:
            matches = [s for s in self._waiting if s.id not in self._cancel_ids and s.coalesce_key in leaders]
            for seq in matches:
                self._waiting.remove(seq)
        for seq in matches:
            self._follow(leaders[seq.coalesce_key], seq, events)

    def _follow(self, leader: Sequence, seq: Sequence, events: EventBuilder) -> None:
        try:  # its drafts would not be used, but a draft model it cannot have is reported as on admission
            self._speculation.draft_models.for_request(seq.request)
        except DraftModelError as exc:
            self._finish(seq, "error", events, str(exc), kind="draft")
            return
        self._sharing.follow(leader, seq, events)

    def _finish(self, seq: Sequence, reason: str, events: EventBuilder, error: str | None = None,
                kind: str = "internal") -> None:
        """End a request exactly once, wherever it is (waiting, admitting, running, following); later calls do
        nothing. Its followers end with it, unless it was cancelled: then the first one takes over."""
        if seq.finished:
            return
        if reason == "cancelled" and seq.followers:
            self._sharing.promote(seq)
        seq.finished = True
        usable = reason != "error"  # after an error the KV cannot be trusted: never cache or copy it
        try:
            if seq.leader is not None:  # a follower (or a promoted leader): nothing native is its own
                if seq in seq.leader.followers:
                    seq.leader.followers.remove(seq)
            else:
                self._sharing.forget_leader(seq)
                if seq in self._running:
                    self._sharing.release_waiters(seq, usable)
                    self._running.remove(seq)
                if seq.slot is not None and seq.slot not in self._free_slots:
                    self._free_slots.add(seq.slot)
                    self._sharing.store(seq, usable)
                if seq.sampler is not None:
                    seq.sampler.free()
                    seq.sampler = None
                self._step.emit(seq, seq.text.finish(), events, final=True, cut=reason in CUT_REASONS)
        finally:  # whatever failed above, the caller gets its completion and the request leaves every queue
            completion = seq.completion(reason, error, kind)
            seq.handle._complete(completion)
            events.finished(completion, seq.handle.state)
            with self._cond:
                self._live.pop(seq.id, None)
                self._cancel_ids.discard(seq.id)
                self._reading.discard(seq)
                if seq.slot is None and seq in self._waiting:
                    self._waiting.remove(seq)
            self._stats.record_tokens(generated=0, completed=1)
        for follower in list(seq.followers):
            follower.t_last = seq.t_last
            self._finish(follower, reason, events, error, kind)
