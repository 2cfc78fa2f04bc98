"""Which tokens go into the next llama_decode: decode tokens first, then as many prompt tokens as time allows.

Decode-first keeps running streams flowing while a long prompt is admitted. How many prompt tokens join a step
is paced by time, not by a fixed count: a step carrying prompt tokens may take up to `mixed_step_factor` times
a pure decode step. A fixed count cannot be right for both ends of a long prompt, because each prompt token
attends over everything before it and so costs more the further in it is. The prompt still advances by at
least `min_prefill_per_step` tokens a step, so admission never starves. No llama.cpp here: the policy can be
read and tested on its own.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

from app.engine.request import Sequence
from app.engine.types import EngineConfig


@dataclass
class StepPlan:
    decode: list[Sequence] = field(default_factory=list)  # one pending token each
    prefill: list[tuple[Sequence, int]] = field(default_factory=list)  # (sequence, prompt tokens this step)
    drafts: dict[Sequence, list[int]] = field(default_factory=dict)  # decode sequence -> tokens to verify after it

    @property
    def n_draft(self) -> int:
        return sum(len(d) for d in self.drafts.values())

    @property
    def n_decode(self) -> int:
        return len(self.decode)

    @property
    def n_prefill(self) -> int:
        return sum(n for _, n in self.prefill)

    @property
    def n_tokens(self) -> int:
        return self.n_decode + self.n_draft + self.n_prefill

    @property
    def sequences(self) -> list[Sequence]:
        return self.decode + [s for s, _ in self.prefill]


class PrefillPacer:
    """Running estimates of what steps cost, from the scheduler's own timings: the median of the last `WINDOW`
    samples of each, so one step slowed by something outside the engine (another process taking a core, a
    collector pause) neither enlarges the next step's prompt part nor shrinks it (a moving average of the
    decode step rose with such an outlier, and the next step planned more prompt tokens into the same noise)."""

    WINDOW = 7

    def __init__(self, config: EngineConfig):
        self.config = config
        self.decode_step_s: dict[int, float] = {}  # pure decode step time, by number of decode tokens
        self.prefill_token_s: float | None = None  # marginal cost of one prompt token in a mixed step
        self._decode_samples: dict[int, deque[float]] = {}
        self._token_samples: deque[float] = deque(maxlen=self.WINDOW)

    def _token_sample(self, seconds_per_token: float) -> None:
        self._token_samples.append(seconds_per_token)
        self.prefill_token_s = statistics.median(self._token_samples)

    def observe(self, n_decode: int, n_prefill: int, seconds: float) -> None:
        if n_decode and not n_prefill:
            samples = self._decode_samples.setdefault(n_decode, deque(maxlen=self.WINDOW))
            samples.append(seconds)
            self.decode_step_s[n_decode] = statistics.median(samples)
        elif n_decode and n_prefill and n_decode in self.decode_step_s:
            self._token_sample(max(seconds - self.decode_step_s[n_decode], 0.0) / n_prefill)
        elif n_prefill and self.prefill_token_s is None:
            self.prefill_token_s = seconds / n_prefill  # pure prefill: a first, optimistic estimate

    def observe_piece(self, n_rows: int, seconds: float) -> None:
        """A prompt piece decoded in a llama_decode of its own beside generating sequences (an image piece,
        vision/step.py): its seconds per row, fixed cost included, measure directly what `prefill_token_s`
        estimates (before it, only steps that mixed text were seen: with no text prompt joining running streams
        the estimate stayed the optimistic one from a pure prefill, and image pieces ran over the target)."""
        if n_rows > 0:
            self._token_sample(seconds / n_rows)

    def prefill_allowance(self, n_decode: int, factor: float | None = None) -> int:
        """Prompt tokens that fit beside n_decode decode tokens within the mixed-step time target: `factor`
        (default `mixed_step_factor`) x their decode step."""
        base = self.decode_step_s.get(n_decode)
        if base is None or not self.prefill_token_s:
            return self.config.step_budget - n_decode  # no timings yet: the configured token budget
        factor = self.config.mixed_step_factor if factor is None else factor
        return int((factor - 1.0) * base / self.prefill_token_s)


def plan_step(running: list[Sequence], config: EngineConfig, n_batch: int,
              prefill_cap: int | None = None, pacer: PrefillPacer | None = None,
              drafts: dict[Sequence, list[int]] | None = None, pieces: bool | None = None) -> StepPlan:
    """`running` is in admission order (FCFS); `prefill_cap` shrinks the prompt part after a full KV. A
    sequence waiting to copy a donor's prefix gets no prompt tokens, and a text run stops before an image
    (`Sequence.text_ready`: images are decoded apart, vision/step.py). In reproducible mode the prompt part is a
    list of pieces of at most `prefill_chunk` tokens, possibly several of one prompt, each for its own decode.
    `drafts` (speculation): tokens each decoding sequence verifies after its pending one; they count as
    decode rows for the pacer and take their room in the batch. `pieces` overrides `config.reproducible` for
    the cut into pieces (False: a reproducible step that goes into one llama_decode, step.py)."""
    plan = StepPlan(decode=[s for s in running if s.pending_token is not None], drafts=dict(drafts or {}))
    admitting = [s for s in running if s.pending_token is None and s.text_ready > 0 and s.donor is None]
    rows = plan.n_decode + plan.n_draft
    if plan.n_decode:
        # The time target is per prompt being admitted: each waiting prompt is an idle slot (lost throughput)
        # and a pane waiting for its first token, so k prompts may take k times one prompt's share of a step.
        # A prompt with images has the share of its image pieces for its text too (`image_step_factor`).
        budget = sum(max(_allowance(pacer, config, rows, seq.has_images), config.min_prefill_per_step)
                     for seq in admitting)
    else:
        budget = n_batch
    if config.reproducible if pieces is None else pieces:  # paced as usual, each piece below the kernel switch
        _plan_pieces(plan, admitting, min(budget, n_batch), config.prefill_chunk)
        return plan
    budget = min(budget, n_batch - rows)
    if prefill_cap is not None:
        budget = min(budget, prefill_cap)
    for seq in admitting:
        if budget <= 0:
            break
        n = min(seq.text_ready, budget)
        plan.prefill.append((seq, n))
        budget -= n
    return plan


def _allowance(pacer: PrefillPacer | None, config: EngineConfig, rows: int, images: bool) -> int:
    """One prompt's share of a step beside `rows` decode rows: the pacer's allowance at `mixed_step_factor`, or
    at `image_step_factor` for a prompt with images (its text after an image, like its image pieces, stays
    within that target: vision/step.py); the configured token budget without a pacer."""
    if pacer is None:
        return config.step_budget - rows
    return pacer.prefill_allowance(rows, config.image_step_factor if images else None)


def _plan_pieces(plan: StepPlan, admitting: list[Sequence], budget: int, piece: int) -> None:
    """Reproducible mode: the same prompt tokens the budget allows, first come first served, cut into pieces of
    at most `piece` tokens; each piece is meant for a llama_decode of its own (reproducible/step.py)."""
    for seq in admitting:
        n = min(seq.text_ready, budget)
        budget -= n
        while n > 0:
            k = min(n, piece)
            plan.prefill.append((seq, k))
            n -= k
        if budget <= 0:
            break


def adapter_group(running: list[Sequence], last: tuple | None) -> tuple[tuple, list[Sequence]]:
    """The LoRA adapter set this step decodes and its sequences (`running`'s order kept): llama.cpp applies one
    set to a whole llama_decode, so two sets never share one (llama-server's `can_batch_with`). With several
    sets, the one after `last` (the set served last step) in a fixed order among those with work: round-robin,
    so every set gets a step in turn whatever its size. A sequence waiting on a donor has no work."""
    keys = {seq.request.lora_key for seq in running}
    if len(keys) == 1:
        return keys.pop(), running
    working = sorted({seq.request.lora_key for seq in running if seq.pending_token is not None
                      or (seq.prompt_remaining > 0 and seq.donor is None)})
    if not working:
        working = sorted(keys)
    key = next((k for k in working if last is not None and k > last), working[0])
    return key, [seq for seq in running if seq.request.lora_key == key]
