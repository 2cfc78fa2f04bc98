"""Reproducible steps: a request's tokens do not depend on what else the engine is running.

A mixin of `Engine`, used when `EngineConfig.reproducible` is set. What varies otherwise, measured on this
build's CPU backend (docs/engine.md, "Reproducible outputs"; scripts/probe_batch_invariance.py): ggml's
FLASH_ATTN_EXT picks its kernel from the shape of the ubatch it is given. 64 or more query tokens of one stream
take a tiled kernel, fewer the per-row one, and one token of a single stream with 512 or more KV cells takes a
split-KV kernel; each sums in its own order. llama.cpp cuts a llama_decode into ubatches by sequence
(`split_equal`: equal tokens per stream, consecutive sequence ids only), so the shape a token sees depends on
its neighbours. Here the engine fixes the shapes itself:

- prompt chunks are aligned, `prefill_chunk` tokens long (scheduler.next_chunk), each its own llama_decode,
  so a chunk always reaches ggml as the same ubatch and is computed by the same kernel in every run;
- decode tokens share one llama_decode; a decode token that would be alone in its ubatch (no sequence in the
  next or previous slot decoding) gets a placeholder token in a neighbouring slot, dropped after the decode,
  so no ubatch is ever one token of one stream.

Invariant: a placeholder leaves its slot's KV exactly as it found it (added at the slot's next position, then
trimmed), and nobody samples its output.
"""

from __future__ import annotations

import logging
import time

from app.engine.events import EventBuilder
from app.engine.request import Sequence
from app.engine.scheduler import StepPlan

log = logging.getLogger("chorus.engine")


class ReproducibleStep:
    def _step_reproducible(self, plan: StepPlan, events: EventBuilder) -> None:
        if not plan.n_tokens:  # cannot happen while every running sequence has work; never spin on it
            if any(seq.donor for seq in self._running):
                for seq in self._running:
                    seq.donor = None
                return
            self._fail_running(events, "internal engine error: a step with nothing to decode")
            return
        elapsed = 0.0
        if plan.decode:
            elapsed += self._decode_group(plan.decode, events)
        for seq, n in plan.prefill:
            if seq.finished or seq not in self._running:
                continue
            elapsed += self._chunk(seq, n, events)
        self._end_step(plan, elapsed)

    def _decode_group(self, decode: list[Sequence], events: EventBuilder) -> float:
        """One llama_decode for every generating sequence (plus placeholders); returns its seconds."""
        pads = self._placeholders(decode)
        group = StepPlan(decode=list(decode))
        outputs = self._fill_batch(group, pads)
        started = time.perf_counter()
        rc = self._decode()
        elapsed = time.perf_counter() - started
        for slot, position, _ in pads:
            self._ctx.trim(slot, position)
        if rc == 1:  # no room in the KV cache even for the decode tokens: end the youngest generating request
            self._finish(max(decode, key=lambda s: s.t_admit), "length", events)
        elif rc != 0:
            message = f"llama_decode failed (code {rc}) in a step of {len(decode)} decode tokens"
            log.error(message)
            for seq in decode:
                self._finish(seq, "error", events, message, kind="decode")
        else:
            self._advance(group, outputs, events)
        return elapsed

    def _chunk(self, seq: Sequence, n: int, events: EventBuilder) -> float:
        """One aligned prompt chunk in a llama_decode of its own; returns its seconds."""
        group = StepPlan(prefill=[(seq, n)])
        outputs = self._fill_batch(group)
        started = time.perf_counter()
        rc = self._decode()
        elapsed = time.perf_counter() - started
        if rc != 0:
            message = (f"llama_decode failed (code {rc}) on a prompt chunk of {n} tokens"
                       + (": no room left in the KV cache" if rc == 1 else ""))
            log.error(message)
            self._finish(seq, "error", events, message, kind="decode")
        else:
            self._advance(group, outputs, events)
        return elapsed

    def _placeholders(self, decode: list[Sequence]) -> list[tuple[int, int, int]]:
        """(slot, position, token) for each neighbouring slot that keeps a lone decode token company."""
        busy = {seq.slot for seq in decode}
        padded: set[int] = set()
        pads = []
        for seq in sorted(decode, key=lambda s: s.slot):
            covered = busy | padded
            if seq.slot - 1 in covered or seq.slot + 1 in covered:
                continue
            for neighbour in (seq.slot + 1, seq.slot - 1):
                if not 0 <= neighbour < self.config.n_slots:
                    continue
                position = self._ctx.next_position(neighbour)
                if position < self.n_ctx_per_slot - 1:
                    pads.append((neighbour, position, seq.pending_token))
                    padded.add(neighbour)
                    break
        return pads
