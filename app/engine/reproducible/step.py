"""Reproducible steps: a request's tokens do not depend on what else the engine is running.

`ReproducibleStep`, used when `EngineConfig.reproducible` is set. What varies otherwise, measured on this
build's CPU backend (docs/engine.md, "Reproducible outputs"; scripts/probes/2026-11-23-batch-invariance.py): ggml's
FLASH_ATTN_EXT picks its kernel from the shape of the ubatch it is given. 64 or more query tokens of one stream
take a tiled kernel, one token of a single stream with 512 or more KV cells takes a split-KV kernel, anything
else the per-row kernel; each sums in its own order. The per-row kernel gives a token the same bits however
its prompt was cut. llama.cpp cuts a llama_decode into ubatches by sequence (`split_equal`: equal tokens per
stream, consecutive sequence ids only), so the shape a token meets depends on its neighbours. Here the engine
makes sure every token meets the per-row kernel:

- a prompt advances in pieces of at most `prefill_chunk` (< 64) tokens, each its own llama_decode or packed
  with other sequences' pieces where llama.cpp's cut keeps every ubatch below 64 tokens a stream and never one
  token alone (packing.py), so it reaches ggml with fewer than 64 query tokens a stream (the pacer still decides
  how many tokens a step takes: their number changes with load, their bits do not);
- decode tokens share one llama_decode; a speculating sequence's run (pending token and drafts, fewer than 64)
  is a llama_decode of its own, like a prompt piece (speculative/step.py);
- a token alone in its ubatch (one token of one stream: a decode token with no neighbouring slot decoding, a
  one-token prompt piece) meets the per-row kernel too where the context runs ggml's per-row kernels and every
  layer matrix is of a type computed row by row (`lone_token_exact`, row_kernels.py), and no LoRA adapter is
  applied; otherwise it gets a placeholder token in a neighbouring slot, dropped after the decode, so that no
  ubatch is one token of one stream.

Where the per-row kernels run, every layer matrix is row-invariant and the step has no LoRA, no ubatch shape
changes any token's bits at all, so the whole step is one llama_decode as in the default mode (app/engine/step.py,
`one_decode_exact`, `EngineConfig.one_decode`) and none of the above is needed.

So a token's KV and logits are the same computed as prompt or decoded, alone or batched: the prompt cache,
fan-out copies and follow-up turns reuse KV exactly as in the default mode.

Invariant: a placeholder leaves its slot's KV exactly as it found it (added at the slot's next position, then
trimmed), and nobody samples its output.
"""

from __future__ import annotations

import functools
import logging

from app.engine.events import EventBuilder
from app.engine.reproducible import row_kernels
from app.engine.reproducible.packing import pack_pieces, safe_to_pack
from app.engine.request import Sequence
from app.engine.scheduler import StepPlan

log = logging.getLogger("chorus.engine")


class ReproducibleStep:
    """Reproducible mode's split step, as the module docstring says. Owns whether this engine's model and
    context make a lone token exact (`lone_token_exact`, fixed per engine). Decodes through the engine's `Step`
    (and a drafting run through `speculation`); ends a request through `finish`."""

    def __init__(self, loop, step, speculation, on_gpu: bool):  # loop: loop.Loop (context.py imports this package)
        self.config, self._model, self._ctx, self._stats = loop.config, loop.model, loop.ctx, loop.stats
        self._running, self._finish, self.n_ctx_per_slot = loop.running, loop.finish, loop.n_ctx_per_slot
        self._step = step
        self._speculation = speculation
        self._on_gpu = on_gpu

    def step(self, plan: StepPlan, events: EventBuilder) -> None:
        elapsed = 0.0
        plain = [seq for seq in plan.decode if seq not in plan.drafts]
        if plain:
            elapsed += self._decode_group(plain, events)
        for seq, draft in plan.drafts.items():  # each drafting run alone: one stream, < 64 tokens
            if not seq.finished and seq in self._running:
                elapsed += self._speculation.decode_alone(seq, draft, events)
        elapsed += self._prefill_pieces(plan.prefill, events)  # packed where safe (packing.py)
        self._step.end_step(plan, elapsed)

    def _decode_padded(self, group: StepPlan, tokens: list[tuple[int, int]]) -> tuple[int, list, float]:
        """llama_decode `group` with placeholders for the (slot, token) pairs that would be alone, then drop
        the placeholders' KV; returns the decode's code, the group's outputs and its seconds."""
        pads = [] if self.lone_token_exact and not any(s.request.lora for s in group.sequences) else \
            self._placeholders(tokens)
        if pads:
            self._stats.record_placeholders(len(pads))
        outputs = self._step.fill_batch(group, pads)
        rc, elapsed = self._step.timed_decode(outputs)
        for slot, position, _ in pads:
            self._ctx.trim(slot, position)
        return rc, outputs, elapsed

    def _decode_group(self, decode: list[Sequence], events: EventBuilder) -> float:
        """One llama_decode for every generating sequence (plus placeholders); returns its seconds."""
        group = StepPlan(decode=list(decode))
        rc, outputs, elapsed = self._decode_padded(group, [(seq.slot, seq.pending_token) for seq in decode])
        if rc == 1:  # no room in the KV cache even for the decode tokens: end the youngest generating request
            self._finish(max(decode, key=lambda s: s.t_admit), "length", events)
        elif rc != 0:
            message = f"llama_decode failed (code {rc}) in a step of {len(decode)} decode tokens"
            log.error(message)
            for seq in decode:
                self._finish(seq, "error", events, message, kind="decode")
        else:
            self._step.advance(group, outputs, events)
        return elapsed

    def _chunk(self, seq: Sequence, n: int, events: EventBuilder) -> float:
        """One prompt piece in a llama_decode of its own (a one-token piece with a placeholder); its seconds."""
        group = StepPlan(prefill=[(seq, n)])
        lone = [(seq.slot, int(seq.prompt[seq.n_prompt_done]))] if n == 1 else []
        rc, outputs, elapsed = self._decode_padded(group, lone)
        if rc != 0:
            message = (f"llama_decode failed (code {rc}) on a prompt piece of {n} tokens"
                       + (": no room left in the KV cache" if rc == 1 else ""))
            log.error(message)
            self._finish(seq, "error", events, message, kind="decode")
        else:
            self._step.advance(group, outputs, events)
        return elapsed

    @functools.cached_property
    def lone_token_exact(self) -> bool:
        """Whether a token alone in its ubatch gets the bits it gets in a batch (row_kernels.py): the context
        runs ggml's per-row kernels and every layer matrix is of a row-invariant type. Fixed per engine."""
        return self._ctx.reference_kernels and row_kernels.matrices_row_invariant(str(self._model.path))

    def one_decode_exact(self, running: list[Sequence]) -> bool:
        """Whether this step may go into one llama_decode with every token's bits what they are alone: the
        per-row kernels compute each row of any ubatch the same way (`lone_token_exact`) and no sequence of
        the step carries a LoRA adapter (its matrices may not be row-invariant), on the CPU only (a GPU's
        kernels pick by shape). `EngineConfig.one_decode`."""
        return (self.config.one_decode and self.lone_token_exact and not self._on_gpu
                and not any(seq.request.lora for seq in running))

    def _placeholders(self, tokens: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
        """For (slot, token) pairs going into one decode: (slot, position, token) placeholders in neighbouring
        slots for each slot that would otherwise form a ubatch of one token (no neighbour in the decode)."""
        busy = {slot for slot, _ in tokens}
        padded: set[int] = set()
        pads = []
        for slot, token in sorted(tokens):
            covered = busy | padded
            if slot - 1 in covered or slot + 1 in covered:
                continue
            for neighbour in (slot + 1, slot - 1):
                if not 0 <= neighbour < self.config.n_slots:
                    continue
                position = self._ctx.next_position(neighbour)
                if position < self.n_ctx_per_slot - 1:
                    pads.append((neighbour, position, token))
                    padded.add(neighbour)
                    break
        return pads

    def _prefill_pieces(self, pieces: list[tuple[Sequence, int]], events: EventBuilder) -> float:
        """Decode the pieces, grouped by `pack_pieces` (each alone with `EngineConfig.pack_pieces` off); returns
        the seconds spent in llama_decode."""
        groups = (pack_pieces(pieces, lambda seq: seq.slot, self._ctx.n_batch) if self.config.pack_pieces
                  else [[piece] for piece in pieces])
        elapsed = 0.0
        for group in groups:
            group = [(seq, n) for seq, n in group if not seq.finished and seq in self._running]
            if len(group) > 1 and safe_to_pack([(seq.slot, n) for seq, n in group]):
                elapsed += self._decode_pack(group, events)
            else:  # alone (a request that ended earlier in the step may have left the rest unsafe to pack)
                for seq, n in group:
                    if not seq.finished and seq in self._running:
                        elapsed += self._chunk(seq, n, events)
        return elapsed

    def _decode_pack(self, group: list[tuple[Sequence, int]], events: EventBuilder) -> float:
        """One llama_decode for pieces of several sequences (an output only where a piece ends its prompt); if
        the KV has no room, llama.cpp restored it, and each piece goes alone to find out whose slot is full."""
        plan = StepPlan(prefill=group)
        outputs = self._step.fill_batch(plan)
        rc, elapsed = self._step.timed_decode(outputs)
        if rc == 1:
            for seq, n in group:
                elapsed += self._chunk(seq, n, events)
        elif rc != 0:
            message = f"llama_decode failed (code {rc}) on {len(group)} prompt pieces packed together"
            log.error(message)
            for seq, _ in group:
                self._finish(seq, "error", events, message, kind="decode")
        else:
            self._stats.record_packed(len(group))
            self._step.advance(plan, outputs, events)
        return elapsed
