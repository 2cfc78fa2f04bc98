"""A request's life on the engine thread: admission to a slot, cancellation, and its one and only end.

A mixin of `Engine`. Every submitted request ends exactly once (`_finish` is idempotent) wherever it is: queued,
being admitted, running, or following an identical request. The failure semantics are in docs/engine.md.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time

import numpy as np
from llama_cpp.llama_grammar import json_schema_to_gbnf

from app.engine import sampling
from app.engine.chat.parse.detect import template_stops
from app.engine.chat.parse.generic import GENERIC
from app.engine.chat.parse.stream import call_stops, for_request
from app.engine.chat.template.reasoning import ReasoningSplit, opens_thinking, split_prefix
from app.engine.constraint import GrammarConstraint
from app.engine.draft_model import DraftModelError, DraftSpec
from app.engine.events import EventBuilder
from app.engine.grammar import GrammarError, make_constraint, tool_constraint
from app.engine.lora import AdapterError
from app.engine.prompt import ContextOverflow, PromptError
from app.engine.request import Sequence
from app.engine.sampling import SamplerChain
from app.engine.speculation import SpecState
from app.engine.text import TextStream
from app.engine.types import RequestState

log = logging.getLogger("chorus.engine")


class RequestLifecycle:
    def _die(self, cause: str) -> None:
        """The engine thread is ending on an exception outside a step's try: record why (`Engine.failure`; from
        now on `submit()` raises EngineStopped) and end every live request, queued ones included, "error" with
        a message naming the cause. Still on the engine thread, before the model is freed."""
        message = f"the engine stopped after an internal error ({cause}); reload the model"
        with self._cond:
            self._failure = cause
            self._closing = True
            doomed = list(self._live.values())
        events = EventBuilder(self._steps)
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
        self._spent = {}  # a new iteration: nothing spent yet on any prompt outside its pieces
        if self._leaders:
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
            if seq.coalesce_key in self._leaders:
                self._follow(self._leaders[seq.coalesce_key], seq, events)
                continue
            self._admitting = seq  # until it is in _running, a fault here must still end it
            started = time.perf_counter()
            try:
                self._admit_one(seq, events)
                self._spend(seq, time.perf_counter() - started)
            except ContextOverflow as exc:
                self._finish(seq, "error", events, str(exc), kind="context")
            except GrammarError as exc:
                self._finish(seq, "error", events, str(exc), kind="grammar")
            except AdapterError as exc:
                self._finish(seq, "error", events, str(exc), kind="adapter")
            except DraftModelError as exc:
                self._finish(seq, "error", events, str(exc), kind="draft")
            except PromptError as exc:
                self._finish(seq, "error", events, str(exc), kind="prompt")
            except Exception as exc:
                log.exception("admitting request %s failed", seq.id)
                self._finish(seq, "error", events, f"internal engine error while admitting: {exc!r}")
            self._admitting = None

    def _admit_one(self, seq: Sequence, events: EventBuilder) -> None:
        text, prompt, n_images = self._prompt_tokens(seq.request)  # vision_step.py: images as placeholders
        seq.prompt = np.asarray(prompt, dtype=np.int32)
        seq.tools = for_request(self._renderer.template_source, seq.request, split_prefix(seq.request.reply_prefix)[0],
                                GENERIC if self._renderer.generic_for(seq.request) else None)
        seq.split = ReasoningSplit(enabled=self.config.reasoning_format != "none",
                                   opened=opens_thinking(text, seq.request.reply_prefix), stops=call_stops(seq.tools))
        if seq.request.messages is not None and (stops := template_stops(self._renderer.template_source)):
            seq.text = TextStream((*seq.request.stop, *stops))  # as llama-server adds the handler's stop strings
        if len(prompt) >= self.n_ctx_per_slot:
            images = f", {int((seq.prompt < 0).sum())} of them for {n_images} image(s)," if n_images else ""
            raise ContextOverflow(f"the prompt is {len(prompt)} tokens{images} but a slot holds "
                                  f"{self.n_ctx_per_slot} (prompt plus reply): shorten it or raise the context "
                                  "per slot")
        if n_images:
            prompt = [t for t in prompt if t >= 0]  # what the samplers and drafts see: the text tokens
            seq.positions = self._vision.positions(seq.prompt)  # M-RoPE images take fewer positions (positions.py)
            self._stats.record_images(in_prompts=n_images)
        self._adapters.load(seq.request.lora)
        draft_model = self._draft_models.for_request(seq.request)  # kind "draft": loaded now, or DraftModelError
        self._place(seq)
        banned = self._model.eog_ids if seq.request.ignore_eos else ()
        seq.sampler = self._sampler_chain(seq.request, banned, thinking=seq.split.thinking)
        seq.sampler.accept_prompt(prompt)
        spec = seq.request.speculative
        if spec is not None and spec.enabled and seq.request.grammar is None and seq.request.json_schema is None \
                and seq.sampler.constraint is None:
            # a constrained request never drafts (docs/engine.md)
            seq.spec = (SpecState(spec, prompt, self._draft_vocab()) if draft_model is None
                        else DraftSpec(spec, prompt, draft_model))
        if seq.request.thinking_budget == 0 and seq.split.thinking:  # no thinking at all: close it at once
            seq.forced = list(self._closing_tokens)
        seq.t_admit = time.perf_counter()
        seq.state = RequestState.PREFILLING
        events.state(seq.id, RequestState.PREFILLING, seq.t_admit)
        self._running.append(seq)
        self._register_leader(seq)

    def _sampler_chain(self, request, banned, thinking: bool = False) -> SamplerChain:
        """The request's sampler chain with its constraint. When `sampling.GRAMMAR_FIRST` (the reference path,
        the engine's earlier one): llama.cpp's grammar sampler first in the chain, a schema converted to GBNF."""
        if sampling.GRAMMAR_FIRST and request.json_schema is not None:
            request = dataclasses.replace(request, json_schema=None,
                                          grammar=json_schema_to_gbnf(json.dumps(request.json_schema)))
        constraint = make_constraint(self._model, request.grammar, request.json_schema)
        if constraint is None and request.tools:  # calls in the template's format (tool_grammar.py)
            constraint = tool_constraint(self._model, request, self._model.chat_template(), thinking,
                                         self._renderer.generic_for(request))
        try:
            if sampling.GRAMMAR_FIRST and isinstance(constraint, GrammarConstraint):
                grammar, constraint.ptr = constraint.ptr, None
                return SamplerChain(request.sampling, self._model.n_vocab, banned, grammar=grammar,
                                    vocab=self._model.vocab)
            return SamplerChain(request.sampling, self._model.n_vocab, banned, constraint=constraint,
                                vocab=self._model.vocab)
        except BaseException:
            if constraint is not None:
                constraint.free()
            raise

    def _finish(self, seq: Sequence, reason: str, events: EventBuilder, error: str | None = None,
                kind: str = "internal") -> None:
        """End a request exactly once, wherever it is (waiting, admitting, running, following); later calls do
        nothing. Its followers end with it, unless it was cancelled: then the first one takes over."""
        if seq.finished:
            return
        if reason == "cancelled" and seq.followers:
            self._promote(seq)
        seq.finished = True
        usable = reason != "error"  # after an error the KV cannot be trusted: never cache or copy it
        try:
            if seq.leader is not None:  # a follower (or a promoted leader): nothing native is its own
                if seq in seq.leader.followers:
                    seq.leader.followers.remove(seq)
            else:
                if self._leaders.get(seq.coalesce_key) is seq:
                    del self._leaders[seq.coalesce_key]
                if seq in self._running:
                    self._release_waiters(seq, usable)
                    self._running.remove(seq)
                if seq.slot is not None and seq.slot not in self._free_slots:
                    self._free_slots.add(seq.slot)
                    self._store_in_cache(seq, usable)
                if seq.sampler is not None:
                    seq.sampler.free()
                    seq.sampler = None
                self._emit(seq, seq.text.finish(), events, final=True)
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
        for follower in list(seq.followers):
            follower.t_last = seq.t_last
            self._finish(follower, reason, events, error, kind)
