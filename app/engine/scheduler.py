"""Which tokens go into the next llama_decode: decode tokens first, prompt chunks in the remaining budget.

Decode-first keeps running streams flowing while a long prompt is admitted; the prompt advances by at least
`min_prefill_per_step` tokens a step, so admission never starves either. Kept free of llama.cpp so the policy
can be read and tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.engine.request import Sequence
from app.engine.types import EngineConfig


@dataclass
class StepPlan:
    decode: list[Sequence] = field(default_factory=list)  # one pending token each
    prefill: list[tuple[Sequence, int]] = field(default_factory=list)  # (sequence, prompt tokens this step)

    @property
    def n_decode(self) -> int:
        return len(self.decode)

    @property
    def n_prefill(self) -> int:
        return sum(n for _, n in self.prefill)

    @property
    def n_tokens(self) -> int:
        return self.n_decode + self.n_prefill

    @property
    def sequences(self) -> list[Sequence]:
        return self.decode + [s for s, _ in self.prefill]


def plan_step(running: list[Sequence], config: EngineConfig, n_batch: int,
              prefill_cap: int | None = None) -> StepPlan:
    """`running` is in admission order (FCFS); `prefill_cap` shrinks the prompt part after a full KV."""
    plan = StepPlan(decode=[s for s in running if s.pending_token is not None])
    if plan.n_decode:
        budget = max(config.step_budget - plan.n_decode, config.min_prefill_per_step)
    else:
        budget = n_batch
    budget = min(budget, n_batch - plan.n_decode)
    if prefill_cap is not None:
        budget = min(budget, prefill_cap)
    for seq in running:
        if budget <= 0:
            break
        if seq.pending_token is None and seq.prompt_remaining > 0:
            n = min(seq.prompt_remaining, budget)
            plan.prefill.append((seq, n))
            budget -= n
    return plan
