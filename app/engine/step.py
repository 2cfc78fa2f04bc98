"""One step of the engine thread: plan the batch, llama_decode it, sample every output, publish the tokens.

`Step` is the hot path and its own concern: what goes into a decode, how a failed decode is handled, and how a
sampled token becomes text, a stop or a length limit. The features whose work joins a step are objects of their
own (prefix sharing, images, speculation, reproducible mode); the step asks each for its part. Runs on the
engine thread only.
"""

from __future__ import annotations

import logging
import time

from app.engine.chat.parse.stream import call_dicts
from app.engine.core_share import CORES
from app.engine.events import EventBuilder
from app.engine.loop import Loop
from app.engine.request import Sequence
from app.engine.sampling.logprobs import token_logprob
from app.engine.sampling.masks import MaskBatch
from app.engine.scheduler import StepPlan, adapter_group, plan_step
from app.engine.sharing.prefix import mirror
from app.engine.types import RequestState

log = logging.getLogger("chorus.engine")


class Step:
    """One decode step over the engine's running sequences. Owns the decode seam (`decode`, so tests can inject
    llama_decode failures), the token masks computed beside a decode, the step counter and which LoRA set the
    last step decoded. Ends requests through `finish` and `fail_running` (the engine's one end of a request)."""

    def __init__(self, loop: Loop, masks: MaskBatch, waiting, fail_running, closing_tokens: list[int]):
        self.config, self._model, self._ctx, self._stats = loop.config, loop.model, loop.ctx, loop.stats
        self._pacer, self._adapters, self._running, self._finish = loop.pacer, loop.adapters, loop.running, loop.finish
        self.n_ctx_per_slot, self._id = loop.n_ctx_per_slot, loop.engine_id
        self.masks = masks
        self._waiting = waiting  # the engine's queue (its length, for the occupancy stats)
        self._fail_running = fail_running
        self._closing_tokens = closing_tokens
        self.decode = self._ctx.decode  # one seam, so tests can inject llama_decode failures
        self.count = 0  # steps that decoded
        self._adapter_turn: tuple | None = None  # the adapter set the last step decoded (scheduler.adapter_group)
        self.sharing = self.images = self.speculation = self.reproducible = None  # set by `attach`

    def attach(self, sharing, images, speculation, reproducible) -> None:
        """The features whose work joins a step: prefix sharing (sharing/prefix.py), images (vision/step.py),
        speculation (speculative/step.py) and reproducible mode (reproducible/step.py)."""
        self.sharing, self.images, self.speculation, self.reproducible = sharing, images, speculation, reproducible

    def run(self, events: EventBuilder) -> None:
        self.sharing.resolve(events, self)  # prefix copies now possible; first tokens from cached logits
        if not self._running:
            return
        images, speculation = self.images, self.speculation
        imaged = images.prefill(events) if images.store is not None else None  # an image piece (vision/step.py)
        prefill_cap = None
        speculation.accepted = 0  # drafted tokens accepted this step (speculative/step.py): decode tokens too
        drafts = speculation.drafts()
        running, adapters = self._running, ()
        if any(seq.request.lora for seq in running):  # one LoRA set per llama_decode (scheduler.adapter_group)
            self._adapter_turn, running = adapter_group(running, self._adapter_turn)
            drafts, adapters = {seq: d for seq, d in drafts.items() if seq in running}, self._adapter_turn
        self._adapters.apply(self._ctx, adapters)
        if imaged is not None:  # its image piece was its share of this step: its text waits for the next one
            running = [seq for seq in running if seq is not imaged]
        split = self.config.reproducible and not self.reproducible.one_decode_exact(running)  # else: one decode
        while True:
            plan = plan_step(running, self.config, self._ctx.n_batch, prefill_cap, self._pacer, drafts,
                             pieces=split)
            if not plan.n_tokens and imaged is not None:  # only an image piece this step (or its request ended)
                return
            if not plan.n_tokens and any(seq.donor for seq in self._running):
                for seq in self._running:  # only donor-waiters left: cannot happen, but never wait forever
                    seq.donor = None
                continue
            if not plan.n_tokens:  # cannot happen while every running sequence has work; never spin on it
                self._fail_running(events, "internal engine error: a step with nothing to decode")
                return
            if split:
                self.reproducible.step(plan, events)
                return
            outputs = self.fill_batch(plan)
            rc, elapsed = self.timed_decode(outputs)
            if rc == 0:
                break
            if plan.drafts:  # a failed decode left nothing usable: retry without drafts, then as before
                for seq in plan.drafts:
                    self._ctx.trim(seq.slot, seq.position(seq.n_past))
                drafts = {}
                continue
            if rc == 1 and plan.n_prefill > 0:  # KV full: retry with a smaller prompt part
                prefill_cap = plan.n_prefill // 2
                if prefill_cap == 0 and not plan.decode:  # not even one prompt token fits
                    for seq, _ in plan.prefill:
                        self._finish(seq, "error", events, "llama.cpp found no room in the KV cache for this "
                                     "prompt (llama_decode returned 1 for a single token)")
                    return
                continue
            if rc == 1:  # even the decode tokens do not fit: end the youngest generating request
                victim = max(plan.decode, key=lambda s: s.t_admit)
                self._finish(victim, "length", events)
                return
            message = f"llama_decode failed (code {rc}) in a step of {plan.n_tokens} tokens"
            log.error(message)
            for seq in plan.sequences:
                self._finish(seq, "error", events, message, kind="decode")
            return
        self.advance(plan, outputs, events)
        self.end_step(plan, elapsed)

    def timed_decode(self, outputs=()) -> tuple[int, float]:
        """llama_decode the batch with this engine's share of the cores (core_share.py), while the token masks of
        the (sequence, index) `outputs` that want one are computed (sampling/masks.py); returns its code and its
        seconds."""
        self._ctx.share_threads(CORES.busy(self._id))
        self.masks.start([seq for seq, _ in outputs])
        started = time.perf_counter()
        self._stats.record_decode()
        try:
            rc = self.decode()
            return rc, time.perf_counter() - started
        finally:
            self.masks.finish()

    def end_step(self, plan: StepPlan, elapsed: float) -> None:
        """Stats, pacing and slot occupancy for a step that decoded `plan` in `elapsed` seconds."""
        self.count += 1
        speculation = self.speculation
        self._stats.record_step(plan.n_decode + speculation.accepted, plan.n_prefill, elapsed + speculation.draft_s)
        self._pacer.observe(plan.n_decode + plan.n_draft, plan.n_prefill, elapsed)
        slot_fill = [0] * self.config.n_slots
        for seq in self._running:
            slot_fill[seq.slot] = seq.n_past
        self._stats.record_occupancy(len(self._running), len(self._waiting), slot_fill)

    def fill_batch(self, plan: StepPlan, pads: list[tuple[int, int, int]] = ()) -> list[tuple[Sequence, int]]:
        """Write the plan into the batch, grouped by slot; returns (sequence, output index) pairs (a
        drafting sequence's first output: every token of its run is one). `pads` are (slot, position, token)
        placeholders whose outputs nobody samples (reproducible/step.py)."""
        runs = [(s.slot, s, (s.pending_token, *plan.drafts.get(s, ())), s.position(s.n_past), True)
                for s in plan.decode]
        runs += [(s.slot, s, s.prompt[s.n_prompt_done:s.n_prompt_done + n], s.position(s.n_past),
                  n == s.prompt_remaining) for s, n in plan.prefill]
        runs += [(slot, None, (token,), position, True) for slot, position, token in pads]
        runs.sort(key=lambda run: run[0])
        batch = self._ctx.batch
        batch.clear()
        outputs = []
        for slot, seq, tokens, position, wants_output in runs:
            drafting = seq in plan.drafts
            index = batch.add(tokens, position, slot, wants_output, output_all=drafting)
            if wants_output and seq is not None:
                outputs.append((seq, index - len(tokens) + 1 if drafting else index))
        return outputs

    def advance(self, plan: StepPlan, outputs: list[tuple[Sequence, int]], events: EventBuilder) -> None:
        for seq in plan.decode:
            seq.n_past += 1
            seq.pending_token = None
        for seq, n in plan.prefill:
            seq.n_past += n
            seq.n_prompt_done += n
        now = time.perf_counter()
        generated = 0
        for seq, index in outputs:  # sample every output before the next decode overwrites the logits
            try:
                if seq in plan.drafts:
                    generated += self.speculation.verify(seq, index, plan.drafts[seq], now, events)
                    continue
                if seq.prompt_logits is None and self.config.prompt_cache:  # its prompt just completed
                    seq.prompt_logits = self._ctx.output_logits(index)
                token = self.forced(seq)
                if token is None:
                    token = seq.sampler.sample(self._ctx.ptr, index)
                logits = self._ctx.output_logits(index, copy=False) if seq.request.logprobs else None
                generated += self.accept_token(seq, token, now, events, logits)
            except Exception as exc:  # this request's sampler or text: end it alone
                log.exception("request %s failed after a decode", seq.id)
                self._finish(seq, "error", events, f"internal engine error after decoding: {exc!r}")
        self._stats.record_tokens(generated=generated, completed=0)

    def first_token(self, seq: Sequence, logits, events: EventBuilder) -> None:
        """A sequence's first token from logits it did not decode (a cached or copied prompt's, sharing/prefix.py)."""
        token = self.forced(seq)
        if token is None:
            token = seq.sampler.sample_logits(logits)
        generated = self.accept_token(seq, token, time.perf_counter(), events, logits)
        self._stats.record_tokens(generated=int(generated), completed=0)

    def accept_token(self, seq: Sequence, token: int, now: float, events: EventBuilder, logits=None) -> bool:
        """Returns whether the token became part of the output (an end-of-generation token does not).
        `logits`: the output row the token was sampled from, when the request asked for logprobs."""
        if seq.t_first is None:
            seq.t_first = now
            events.enter(seq, RequestState.GENERATING, now)
            mirror(seq, events, state=RequestState.GENERATING)
        seq.t_last = now
        if self._model.is_eog(token):
            self._finish(seq, "stop", events)
            return False
        seq.generated.append(token)
        events.tokens(seq.id, len(seq.generated))
        entries = None
        if seq.token_logprobs is not None and logits is not None:
            entries = [token_logprob(logits, token, seq.request.logprobs, self._model.piece_text)]
            seq.token_logprobs.extend(entries)
            events.logprobs(seq.id, entries)
        mirror(seq, events, now=now, logprobs=entries)
        self.emit(seq, seq.text.feed(self._model.piece(token)), events, token=True)
        budget = seq.request.thinking_budget
        if budget is not None and seq.split.thinking and not seq.forced and seq.split.tokens >= budget:
            seq.forced = list(self._closing_tokens)  # the budget is spent: close the block, the answer follows
        if seq.text.stopped:
            self._finish(seq, "stop", events)
        elif len(seq.generated) >= seq.request.max_tokens or seq.n_past + 1 >= self.n_ctx_per_slot:
            self._finish(seq, "length", events)
        else:
            seq.pending_token = token
        return True

    def forced(self, seq: Sequence) -> int | None:
        """The next forced token (accepted by the sampler chain as if sampled), or None: sample as usual."""
        if not seq.forced:
            return None
        token = seq.forced.pop(0)
        seq.sampler.accept(token)
        return token

    def emit(self, seq: Sequence, released: str, events: EventBuilder, token: bool = False,
              final: bool = False, cut: bool = False) -> None:
        """Publish released text, the answer to the stream and the thinking apart (reasoning.py); `token`: it
        came from one generated token, `final`: the reply ended, nothing is held back any more (`cut`: it ended
        before its end, by the token limit or a cancel: its completed calls are kept, ToolStream.final)."""
        answer, thought = seq.split.feed(released, token) if released or token else ("", "")
        if final:
            more_answer, more_thought = seq.split.finish()
            answer, thought = answer + more_answer, thought + more_thought
        if seq.tools is not None:  # only content leaves; calls go out whole, as they grow
            answer, changed = seq.tools.feed(answer)
            if final:
                more, finished = seq.tools.finish(cut)
                answer, changed = answer + more, changed or finished
            if changed:
                calls = call_dicts(seq.tools.calls, seq.id)
                for target in (seq, *seq.followers):
                    events.tool_calls(target.id, calls)
        if thought:
            events.reasoning(seq.id, thought)
        if answer:
            if seq.t_answer is None:
                seq.t_answer = time.perf_counter()
            seq.handle._publish(answer)
            events.delta(seq.id, answer)
        if answer or thought:
            mirror(seq, events, delta=answer, reasoning=thought)

