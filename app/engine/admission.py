"""A queued request made a running sequence on a free slot: its prompt's tokens (images and media included), the
tool-call parser and reasoning split of its template, its stop strings, its sampler chain with its constraint,
its LoRA set and drafts, and its place in the prompt cache.

`Admission.admit` either leaves the sequence running, or raises one of `REFUSALS` (the request's own fault: the
engine ends it with an error of that kind) or anything else (the engine's fault: an internal error). The loop over
the waiting queue, cancellation and the one end of a request stay with `Engine` (engine.py).
"""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
from llama_cpp.llama_grammar import json_schema_to_gbnf

from app.engine.chat.parse.detect import template_stops
from app.engine.chat.parse.generic import GENERIC
from app.engine.chat.parse.stream import call_stops, for_request
from app.engine.chat.template.reasoning import ReasoningSplit, opens_thinking, split_prefix
from app.engine.events import EventBuilder
from app.engine.loop import Loop
from app.engine.lora import AdapterError
from app.engine.prompt import ContextOverflow, PromptError, PromptRenderer
from app.engine.request import Sequence
from app.engine.sampling import chain as sampling
from app.engine.sampling.chain import SamplerChain
from app.engine.sampling.constraint import GrammarConstraint
from app.engine.sampling.grammar import GrammarError, make_constraint, tool_constraint
from app.engine.sharing.prefix import PrefixSharing
from app.engine.speculative.draft_model import DraftModelError, DraftSpec
from app.engine.speculative.drafts import SpecState
from app.engine.speculative.step import SpeculativeStep
from app.engine.text import TextStream
from app.engine.types import RequestState
from app.engine.vision.step import VisionStep

# what a request can be refused for at admission, and the error kind its completion reports
_KINDS = ((ContextOverflow, "context"), (GrammarError, "grammar"), (AdapterError, "adapter"),
          (DraftModelError, "draft"), (PromptError, "prompt"))
REFUSALS = tuple(cls for cls, _ in _KINDS)


def refusal_kind(exc: BaseException) -> str:
    return next(kind for cls, kind in _KINDS if isinstance(exc, cls))


class Admission:
    """Prepares a queued sequence and puts it on the slot `PrefixSharing.place` gives it."""

    def __init__(self, loop: Loop, renderer: PromptRenderer, images: VisionStep, sharing: PrefixSharing,
                 speculation: SpeculativeStep, closing_tokens: list[int]):
        self._loop = loop
        self._renderer = renderer
        self._images = images
        self._sharing = sharing
        self._speculation = speculation
        self._closing_tokens = closing_tokens

    def admit(self, seq: Sequence, events: EventBuilder) -> None:
        # vision/step.py: images as placeholders; videos' frames and clips' samples were read before it queued
        text, prompt, media = self._images.prompt_tokens(seq.request, seq.media)
        n_images = sum(m.kind == "image" for m in media)
        seq.prompt = np.asarray(prompt, dtype=np.int32)
        seq.tools = for_request(self._renderer.template_source, seq.request, split_prefix(seq.request.reply_prefix)[0],
                                GENERIC if self._renderer.generic_for(seq.request) else None)
        seq.split = ReasoningSplit(enabled=self._loop.config.reasoning_format != "none",
                                   opened=opens_thinking(text, seq.request.reply_prefix), stops=call_stops(seq.tools))
        if seq.request.messages is not None and (stops := template_stops(self._renderer.template_source)):
            seq.text = TextStream((*seq.request.stop, *stops))  # as llama-server adds the handler's stop strings
        if len(prompt) >= self._loop.n_ctx_per_slot:
            raise ContextOverflow(self._images.too_long(len(prompt), int((seq.prompt < 0).sum()), media,
                                                        self._loop.n_ctx_per_slot))
        if media:
            prompt = [t for t in prompt if t >= 0]  # what the samplers and drafts see: the text tokens
            seq.positions = self._images.store.positions(seq.prompt)  # M-RoPE images take fewer positions
            self._loop.stats.record_images(in_prompts=n_images, clips_in_prompts=self._images.clip_windows(seq.prompt),
                                      frames_in_prompts=self._images.video_frames(seq.prompt))
        self._loop.adapters.load(seq.request.lora)
        # kind "draft": loaded now, or DraftModelError
        draft_model = self._speculation.draft_models.for_request(seq.request)
        self._sharing.place(seq)
        banned = self._loop.model.eog_ids if seq.request.ignore_eos else ()
        seq.sampler = self.sampler_chain(seq.request, banned, thinking=seq.split.thinking)
        seq.sampler.accept_prompt(prompt)
        spec = seq.request.speculative
        if spec is not None and spec.enabled and seq.request.grammar is None and seq.request.json_schema is None \
                and seq.sampler.constraint is None:
            # a constrained request never drafts (docs/engine.md)
            seq.spec = (SpecState(spec, prompt, self._speculation.vocab()) if draft_model is None
                        else DraftSpec(spec, prompt, draft_model))
        if seq.request.thinking_budget == 0 and seq.split.thinking:  # no thinking at all: close it at once
            seq.forced = list(self._closing_tokens)
        seq.t_admit = time.perf_counter()
        events.enter(seq, RequestState.PREFILLING, seq.t_admit)
        self._loop.running.append(seq)
        self._sharing.register_leader(seq)

    def sampler_chain(self, request, banned, thinking: bool = False) -> SamplerChain:
        """The request's sampler chain with its constraint. When `sampling.GRAMMAR_FIRST` (the reference path):
        llama.cpp's grammar sampler first in the chain, a schema converted to GBNF."""
        if sampling.GRAMMAR_FIRST and request.json_schema is not None:
            request = dataclasses.replace(request, json_schema=None,
                                          grammar=json_schema_to_gbnf(json.dumps(request.json_schema)))
        constraint = make_constraint(self._loop.model, request.grammar, request.json_schema)
        if constraint is None and request.tools:  # calls in the template's format (tool_grammar.py)
            constraint = tool_constraint(self._loop.model, request, self._loop.model.chat_template(), thinking,
                                         self._renderer.generic_for(request))
        try:
            if sampling.GRAMMAR_FIRST and isinstance(constraint, GrammarConstraint):
                grammar, constraint.ptr = constraint.ptr, None
                return SamplerChain(request.sampling, self._loop.model.n_vocab, banned, grammar=grammar,
                                    vocab=self._loop.model.vocab)
            return SamplerChain(request.sampling, self._loop.model.n_vocab, banned, constraint=constraint,
                                vocab=self._loop.model.vocab)
        except BaseException:
            if constraint is not None:
                constraint.free()
            raise
