"""Speculative decoding on the engine thread: which drafts join a step, and how a drafted run is verified.

`SpeculativeStep` (docs/engine.md, "Speculative decoding"; the drafts and the auto rule are drafts.py).
A drafting sequence decodes (pending token, d1..dk) at its next k + 1 positions, every one an output. Then
`verify` samples output 0 with the sequence's own chain; while the sampled token equals the next draft (and
the request has not ended) it samples the next output; the first token that differs, or the last output, ends
it. Every sampled token becomes output exactly as it would have one step at a time, and the KV of the drafts
after the last accepted one is dropped, so the slot holds exactly the tokens its records say.

Invariants: a step's tokens never exceed n_batch, a draft never reaches past the slot's context or the
request's max_tokens, and only indices marked as outputs of the decode just made are sampled.
"""

from __future__ import annotations

import logging
import time

from app.engine.core_share import CORES
from app.engine.events import EventBuilder
from app.engine.loop import Loop
from app.engine.request import Sequence
from app.engine.scheduler import StepPlan
from app.engine.speculative.draft_model import DraftModels, DraftSpec, model_drafts
from app.engine.speculative.drafts import DraftVocab

log = logging.getLogger("chorus.engine")


class SpeculativeStep:
    """Owns the draft models (loaded on first use), the model's DraftVocab, and this step's figures: the seconds
    the draft models took (`draft_s`) and the drafted tokens accepted (`accepted`). Decodes and samples through
    the engine's `Step`; ends a request through `finish`."""

    def __init__(self, loop: Loop, draft_models: DraftModels, step):
        self.config, self._model, self._ctx, self._stats = loop.config, loop.model, loop.ctx, loop.stats
        self._running, self._finish = loop.running, loop.finish
        self.n_ctx_per_slot, self._id = loop.n_ctx_per_slot, loop.engine_id
        self.draft_models = draft_models
        self._step = step
        self._vocab: DraftVocab | None = None
        self.draft_s = 0.0  # seconds the draft models took this step (counted in the step's time)
        self.accepted = 0  # drafted tokens accepted this step (decode tokens too)

    def vocab(self) -> DraftVocab:
        """The model's DraftVocab (drafts.py), built for the first drafting request (~0.1 s) and kept."""
        vocab = self._vocab
        if vocab is None:
            vocab = self._vocab = DraftVocab([self._model.piece_text(t) for t in range(self._model.n_vocab)])
        return vocab

    def drafts(self) -> dict[Sequence, list[int]]:
        """The drafts for the next step, for every decoding sequence that speculates, within the batch: the
        decode tokens first, then drafts in admission order, leaving room for `min_prefill_per_step` prompt
        tokens. In reproducible mode a drafting run is a llama_decode of its own, below `prefill_chunk`."""
        decoding = [s for s in self._running if s.pending_token is not None]
        room = self._ctx.n_batch - len(decoding) - self.config.min_prefill_per_step
        drafts, wanted = {}, {}
        for seq in decoding:
            if seq.spec is None or seq.forced or room <= 0:
                continue
            limit = min(room, seq.request.max_tokens - len(seq.generated) - 1,
                        self.n_ctx_per_slot - 2 - seq.n_past)
            if self.config.reproducible:
                limit = min(limit, self.config.prefill_chunk - 1)
            if isinstance(seq.spec, DraftSpec):  # a draft model drafts for all of them at once, below
                wanted[seq] = seq.spec.wanted(seq.generated, limit, len(decoding))
                room -= wanted[seq]
                continue
            draft = seq.spec.draft(seq.generated, limit, len(decoding))
            if draft:
                drafts[seq] = draft
                room -= len(draft)
        self.draft_s = 0.0
        if any(wanted.values()):
            started = time.perf_counter()
            self.draft_models.share_threads(CORES.busy(self._id))
            drafts.update(model_drafts({seq: n for seq, n in wanted.items() if n > 0}))
            self.draft_s = time.perf_counter() - started
        return drafts

    def verify(self, seq: Sequence, first: int, draft: list[int], now: float, events: EventBuilder) -> int:
        """Sample the outputs `first`..`first + len(draft)` of a drafting sequence (its n_past already counts
        the pending token) as the module docstring says; returns how many tokens became output."""
        slot, spec = seq.slot, seq.spec
        ctx, accept_token = self._ctx, self._step.accept_token
        generated = accepted = 0
        spec.record(len(draft), 0)
        try:
            for j in range(len(draft) + 1):
                token = seq.sampler.sample(ctx.ptr, first + j)
                hit = j < len(draft) and token == draft[j]
                if hit:  # counted before the token may end the request (its Completion includes it)
                    accepted += 1
                    spec.record(0, 1)
                logits = ctx.output_logits(first + j, copy=False) if seq.request.logprobs else None
                generated += accept_token(seq, token, now, events, logits)
                if seq.finished or not hit:
                    break
                seq.n_past += 1  # the draft just confirmed is in the KV already
        finally:
            ctx.trim(slot, seq.position(seq.n_past))  # the rejected drafts' KV (the cache record agrees)
            spec.review()
            self._stats.record_draft(len(draft), accepted)
            self.accepted += accepted
        return generated

    def decode_alone(self, seq: Sequence, draft: list[int], events: EventBuilder) -> float:
        """Reproducible mode: one drafting sequence's run in a llama_decode of its own (one stream, fewer than
        64 tokens: the per-row attention kernel, as for every other token); returns its seconds."""
        group = StepPlan(decode=[seq], drafts={seq: draft})
        step = self._step
        outputs = step.fill_batch(group)
        rc, elapsed = step.timed_decode(outputs)
        if rc == 0:
            step.advance(group, outputs, events)
            return elapsed
        self._ctx.trim(seq.slot, seq.position(seq.n_past))  # whatever part of the run reached the KV
        if rc == 1:  # no room left in the slot's KV: end it as a plain decode would
            self._finish(seq, "length", events)
        else:
            message = f"llama_decode failed (code {rc}) verifying {len(draft)} drafted tokens"
            log.error(message)
            self._finish(seq, "error", events, message, kind="decode")
        return elapsed
