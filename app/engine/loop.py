"""The parts the engine thread's objects share: built once by `Engine`, handed to each object it is made of.

`Step` (step.py), `PrefixSharing` (sharing/prefix.py), `VisionStep` (vision/step.py), `SpeculativeStep`
(speculative/step.py) and `ReproducibleStep` (reproducible/step.py) each own their own state; what they have in
common is the engine's: its model and context, its stats, pacer and LoRA adapters, the running sequences and
free slots (changed in place only, never replaced), and the one way a request ends (`Engine._finish`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.engine.context import LlamaContext
from app.engine.lora import LoraAdapters
from app.engine.native import LlamaModel
from app.engine.request import Sequence
from app.engine.scheduler import PrefillPacer
from app.engine.stats import StatsRecorder
from app.engine.types import EngineConfig


@dataclass(frozen=True, eq=False)
class Loop:
    config: EngineConfig
    model: LlamaModel
    ctx: LlamaContext
    stats: StatsRecorder
    pacer: PrefillPacer
    adapters: LoraAdapters
    running: list[Sequence]  # the sequences on slots, in admission order
    free_slots: set[int]
    finish: Callable[..., None]  # finish(seq, reason, events, error=None, kind="internal"): the one end of a request
    n_ctx_per_slot: int  # what a slot holds, prompt plus reply
    engine_id: int  # this engine's key in the core share (core_share.py)
