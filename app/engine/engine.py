"""The continuous-batching engine: one thread, one llama_context, one llama_decode per step for every sequence.

Other threads only touch the waiting queue, the cancel set and the subscriber list (under one condition
variable); the engine thread owns the model, context, batch, samplers, running sequences and the prompt cache,
and is the only one that calls llama.cpp or frees anything. Its work is split by concern into mixins: a
request's life (lifecycle.py), one decode step (step.py, or reproducible.py when outputs must not depend on
what else runs; spec_step.py when requests draft tokens) and prefix sharing (sharing.py).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import deque
from collections.abc import Callable

from app.engine.chat.template.reasoning import CLOSING_TEXT
from app.engine.context import LlamaContext
from app.engine.core_share import CORES
from app.engine.devices import resolve_gpu_layers
from app.engine.draft_model import DraftModels
from app.engine.events import EventBuilder
from app.engine.grammar import check as grammar_check
from app.engine.lifecycle import RequestLifecycle
from app.engine.lora import LoraAdapters
from app.engine.masks import MaskBatch
from app.engine.native import LlamaModel
from app.engine.prompt import PromptRenderer
from app.engine.prompt_cache import PromptCache
from app.engine.reproducible import ReproducibleStep
from app.engine.request import RequestHandle, Sequence, next_request_id
from app.engine.scheduler import PrefillPacer
from app.engine.sharing import PrefixSharing
from app.engine.spec_step import SpeculativeStep
from app.engine.stats import StatsRecorder
from app.engine.step import StepExecution
from app.engine.types import EngineConfig, EngineStopped, GenerationRequest, StatsSnapshot, StepEvent
from app.engine.vision import ImageStore
from app.engine.vision_step import VisionStep

log = logging.getLogger("chorus.engine")
# Process-wide, so ids stay unique when an app replaces one engine with another.


class Engine(RequestLifecycle, StepExecution, ReproducibleStep, SpeculativeStep, PrefixSharing, VisionStep):
    """Load a model, start the engine thread; `submit()` from any thread. Use as a context manager."""

    def __init__(self, config: EngineConfig):
        self.config = config
        self.offload = resolve_gpu_layers(config)  # what a CPU build or "auto" makes of n_gpu_layers
        self._model = LlamaModel(config.model_path, self.offload.layers)  # a readable error for a bad file
        try:
            self._ctx = LlamaContext(self._model, config)
            self._renderer = PromptRenderer(self._model, config.chat_format, config.tool_format)
            # the vision projector (vision.py, vision_step.py): images in messages; None = text only
            self._vision = ImageStore(self._model, config.mmproj, config.n_threads) if config.mmproj else None
            self._embd_batch = None
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
        self._decode = self._ctx.decode  # one seam, so tests can inject llama_decode failures
        self._cond = threading.Condition()
        self._waiting: deque[Sequence] = deque()
        self._live: dict[int, Sequence] = {}
        self._cancel_ids: set[int] = set()
        self._closing = False
        self._failure: str | None = None  # why the engine thread died (docs/engine.md, "Failures")
        self._native_lock = threading.Lock()  # check_grammar (any thread) vs freeing the model (engine thread)
        self._released = False
        self._admitting: Sequence | None = None
        self._spent: dict[Sequence, float] = {}  # this iteration's admission/copy/encode time (vision_step.py)
        self._running: list[Sequence] = []
        self._free_slots = set(range(config.n_slots))
        self._subscribers: tuple[Callable[[StepEvent], None], ...] = ()  # replaced whole, under _cond
        self._kv_positions = [0] * config.n_slots  # written by the engine thread after every iteration
        self._kv_expected = [0] * config.n_slots  # what the engine's own records say those positions are
        self._cache = PromptCache(config.n_slots)
        self._masks = MaskBatch(config.n_slots, self._model.n_vocab)
        self._leaders: dict[str, Sequence] = {}  # coalescing: request key -> the sequence decoding it
        self._clear_cache = False
        self._idle = threading.Event()  # set after an iteration that left nothing waiting or running
        self._idle.set()
        self._steps = 0
        self._step_accepted = 0
        self._stats = StatsRecorder(config.n_slots, self.n_ctx_per_slot)
        self._pacer = PrefillPacer(config)
        self._adapters = LoraAdapters(self._model)  # LoRA files loaded on this model (lora.py)
        self._adapter_turn: tuple | None = None  # the adapter set the last step decoded (scheduler.adapter_group)
        # draft models of speculative kind "draft", loaded on first use (draft_model.py)
        self._draft_models = DraftModels(self._model, config, -1 if self.offload.on_gpu else 0)
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
            self._waiting.append(seq)
            self._live[seq.id] = seq
            self._cond.notify()
        return handle

    def render_prompt(self, request: GenerationRequest) -> str:
        """The exact text the request becomes before tokenization: its messages through the chat template (or
        its raw prompt; `media.MARKER` in place of each image), then its reply prefix. Safe from any thread;
        raises PromptError as a submit would end."""
        return self._marked_text(request) + request.reply_prefix

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
        busy = self.config.n_slots - len(self._free_slots)  # the engine thread's set; len() is atomic under the GIL
        return dataclasses.replace(snap, queued=queued, active=active, reproducible=self.config.reproducible,
                                   slots_busy=busy,
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
            events = EventBuilder(self._steps)
            try:
                self._apply_cancels(cancels, events)
                if self._clear_cache:
                    self._apply_cache_clear()
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
                    CORES.idle(id(self))  # other engines may use every thread again
                    self._idle.set()
            if closing:
                return

    def _snapshot_kv(self) -> None:
        expected = [self._cache.cached_end(slot) for slot in range(self.config.n_slots)]
        for seq in self._running:
            expected[seq.slot] = seq.kv_end()
        self._kv_expected = expected
        self._kv_positions = [self._ctx.next_position(slot) for slot in range(self.config.n_slots)]

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
        CORES.idle(id(self))
        with self._native_lock:
            self._released = True
            self._masks.close()
            for seq in list(self._running):
                if seq.sampler is not None:
                    seq.sampler.free()
            self._running.clear()
            if self._vision is not None:
                self._vision.close()
            self._draft_models.close()
            self._ctx.close()
            self._model.close()
