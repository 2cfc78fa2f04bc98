"""Throughput counters measured by the scheduler around each llama_decode.

llama.cpp's own perf counters file a batched decode step as "prompt eval", so they cannot tell decode from
prefill; the scheduler knows what each step carried and times it itself. Two kinds of rate (docs/engine.md,
"Statistics"): means since the last reset over llama_decode time (`decode_tps`, `prefill_tps`), and tokens in
the trailing window of wall clock (`recent_decode_tps`, `recent_prefill_tps`, app/engine/rates.py). Likewise
`avg_concurrent` (decode tokens per decode-carrying step since the reset) and `recent_avg_concurrent` (the same
ratio over the steps of the trailing window; None when none ran in it).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from app.engine.rates import WindowRate
from app.engine.types import RequestState, StatsSnapshot

DRAFT_RUNS_KEPT = 64  # StatsSnapshot.recent_draft_runs: the last verified drafting runs


def occupancy(shown) -> dict[str, int]:
    """`queued`, `prefilling`, `generating`, `active` and `slots_busy` of the unfinished requests, given as
    (state, is a coalesced follower) pairs: the states the engine's events carried to every subscriber
    (Engine.stats), so a pane's state and the stats panel's counts are one fact. A follower has its leader's state
    but no slot."""
    counts = dict.fromkeys(RequestState, 0)
    following = 0
    for state, follower in shown:
        counts[state] += 1
        following += follower and state is not RequestState.QUEUED
    active = counts[RequestState.PREFILLING] + counts[RequestState.GENERATING]
    return {"queued": counts[RequestState.QUEUED], "prefilling": counts[RequestState.PREFILLING],
            "generating": counts[RequestState.GENERATING], "active": active, "slots_busy": active - following}


class StatsRecorder:
    """Written by the engine thread once per step; `snapshot()` is safe from any thread."""

    def __init__(self, n_slots: int, n_ctx_per_slot: int, clock: Callable[[], float] = time.monotonic):
        self._lock = threading.Lock()
        self.n_slots = n_slots
        self.n_ctx_per_slot = n_ctx_per_slot
        self._recent_generated = WindowRate(clock=clock)  # tokens that became output
        self._recent_prompt = WindowRate(clock=clock)  # prompt tokens prefilled
        self._recent_decode_tokens = WindowRate(clock=clock)  # tokens decoded by decode-carrying steps
        self._recent_decode_steps = WindowRate(clock=clock)  # those steps
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.steps = 0
            self.decode_steps = 0
            self.decode_tokens = 0
            self.decode_time = 0.0
            self.prefill_tokens = 0  # pure-prefill steps only: they alone measure the prefill rate
            self.prefill_time = 0.0
            self.prompt_tokens_total = 0
            self.generated_total = 0
            self.completed = 0
            self.prompt_tokens_cached = 0
            self.coalesced = 0
            self.drafted = 0
            self.accepted = 0
            self.draft_runs: deque[tuple[int, int]] = deque(maxlen=DRAFT_RUNS_KEPT)  # (drafted, accepted) a run
            self.images_in_prompts = 0  # images in admitted prompts (each occurrence)
            self.images_encoded = 0  # of those, the ones the projector encoded (the rest reused an encoding or KV)
            self.clips_in_prompts = 0  # audio windows (30 s of a clip, for Whisper-style encoders) in admitted prompts
            self.clips_encoded = 0  # of those, the ones the projector encoded
            self.image_rows = 0  # image embeddings decoded into KV (the rest of an image's were copied or cached)
            self.clip_rows = 0  # audio windows' embeddings decoded into KV
            # prompt pieces that shared a llama_decode with other sequences' (reproducible/packing.py)
            self.packed_pieces = 0
            self.packed_decodes = 0  # those llama_decodes
            self.placeholders = 0  # placeholder tokens decoded beside a lone token (reproducible/step.py)
            self.decodes = 0  # llama_decode calls
            self.active = 0
            self.queued = 0
            self.slot_used = [0] * self.n_slots
            for window in self._windows():
                window.clear()

    def record_step(self, n_decode: int, n_prefill: int, seconds: float) -> None:
        with self._lock:
            self.steps += 1
            self.prompt_tokens_total += n_prefill
            self._recent_prompt.add(n_prefill)
            if n_decode:  # pure-decode and mixed steps feed the decode rate
                self.decode_steps += 1
                self.decode_tokens += n_decode
                self.decode_time += seconds
                self._recent_decode_tokens.add(n_decode)
                self._recent_decode_steps.add(1)
            elif n_prefill:
                self.prefill_tokens += n_prefill
                self.prefill_time += seconds

    def record_tokens(self, generated: int, completed: int) -> None:
        with self._lock:
            self.generated_total += generated
            self._recent_generated.add(generated)
            self.completed += completed

    def record_draft(self, drafted: int, accepted: int) -> None:
        with self._lock:
            self.drafted += drafted
            self.accepted += accepted
            self.draft_runs.append((drafted, accepted))

    def record_images(self, in_prompts: int = 0, encoded: int = 0, clips_in_prompts: int = 0,
                      clips_encoded: int = 0, image_rows: int = 0, clip_rows: int = 0) -> None:
        with self._lock:
            self.images_in_prompts += in_prompts
            self.images_encoded += encoded
            self.clips_in_prompts += clips_in_prompts
            self.clips_encoded += clips_encoded
            self.image_rows += image_rows
            self.clip_rows += clip_rows

    def record_packed(self, pieces: int) -> None:
        with self._lock:
            self.packed_pieces += pieces
            self.packed_decodes += 1

    def record_decode(self) -> None:
        with self._lock:
            self.decodes += 1

    def record_placeholders(self, n: int) -> None:
        with self._lock:
            self.placeholders += n

    def record_reuse(self, cached_tokens: int, coalesced: int = 0) -> None:
        with self._lock:
            self.prompt_tokens_cached += cached_tokens
            self.coalesced += coalesced

    def record_occupancy(self, active: int, queued: int, slot_used: list[int]) -> None:
        with self._lock:
            self.active, self.queued, self.slot_used = active, queued, slot_used

    def _windows(self) -> tuple[WindowRate, ...]:
        return self._recent_generated, self._recent_prompt, self._recent_decode_tokens, self._recent_decode_steps

    def snapshot(self) -> StatsSnapshot:
        with self._lock:
            recent_steps = self._recent_decode_steps.count()
            return StatsSnapshot(
                n_slots=self.n_slots,
                active=self.active,
                queued=self.queued,
                decode_tps=self.decode_tokens / self.decode_time if self.decode_time > 0 else None,
                prefill_tps=self.prefill_tokens / self.prefill_time if self.prefill_time > 0 else None,
                avg_concurrent=self.decode_tokens / self.decode_steps if self.decode_steps else None,
                steps=self.steps,
                decode_tokens=self.decode_tokens,
                decode_time_s=self.decode_time,
                prefill_tokens=self.prefill_tokens,
                prefill_time_s=self.prefill_time,
                prompt_tokens_total=self.prompt_tokens_total,
                generated_tokens_total=self.generated_total,
                completed=self.completed,
                slot_context_used=list(self.slot_used),
                n_ctx_per_slot=self.n_ctx_per_slot,
                prompt_tokens_cached=self.prompt_tokens_cached,
                coalesced=self.coalesced,
                drafted_tokens=self.drafted,
                accepted_tokens=self.accepted,
                recent_draft_runs=tuple(self.draft_runs),
                images_encoded=self.images_encoded,
                images_reused=max(0, self.images_in_prompts - self.images_encoded),
                clips_encoded=self.clips_encoded,
                clips_reused=max(0, self.clips_in_prompts - self.clips_encoded),
                image_rows_prefilled=self.image_rows,
                clip_rows_prefilled=self.clip_rows,
                recent_decode_tps=self._recent_generated.rate(),
                recent_prefill_tps=self._recent_prompt.rate(),
                recent_avg_concurrent=self._recent_decode_tokens.count() / recent_steps if recent_steps else None,
                packed_pieces=self.packed_pieces,
                packed_decodes=self.packed_decodes,
                placeholders=self.placeholders,
                decodes=self.decodes,
            )
