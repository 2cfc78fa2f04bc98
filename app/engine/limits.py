"""Every default and limit of the engine's user-facing numbers, declared once, and `Limit`, their shape.

The engine's dataclasses validate against these, the window's spin boxes take their ranges and defaults from
them, and the settings store clamps to them, so a value the UI accepts is always one the engine accepts.
The layers above declare their own numbers as `Limit`s beside the code that uses them (a server's concurrency in
app/backends/openai_backend.py, the embedder in app/backends/embedding.py, the cluster distance in
app/session/stability.py, the arena's bootstrap in app/arena/board.py, eval-compare's alpha in
app/evaluate/run_compare.py), and the window and the settings store read those.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from app.models.memory import KV_TYPES as _KV_TYPES


@dataclass(frozen=True)
class Limit:
    """A closed range [low, high] with its default. `decimals`/`step` are how a form shows it."""

    low: float
    high: float
    default: float | int
    step: float = 1
    decimals: int = 0

    def check(self, name: str, value) -> None:
        if not (self.low <= value <= self.high):
            raise ValueError(f"{name} must be in [{_number(self.low)}, {_number(self.high)}], got {value}")

    def clamp(self, value):
        return type(self.default)(min(max(value, self.low), self.high))


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def default_threads() -> int:
    """All cores up to 8: ggml threads spin, so more threads than cores only slows every step down."""
    return max(1, min(os.cpu_count() or 2, 8))


# The slots a fresh install decodes at once: `run`, `eval` and the window's first launch all take SLOTS.default.
# Measured on a 2-vCPU EPYC with SmolLM2-135M (`bench --scale`, docs/benchmarks.md): the aggregate rate gained
# +51 % from 2 to 4 slots, +26 % from 4 to 8 and +11 % from 8 to 16, so the knee is at 8; an evaluation suite
# took 72.4 s with 4 slots and 65.0 s with 8. More cores run each step faster, so batching keeps paying further
# up: 4 slots per core, at least the 8 measured here and at most 16 (each slot holds its own KV cache).
SLOTS_PER_CORE, SLOTS_DEFAULT_LOW, SLOTS_DEFAULT_HIGH = 4, 8, 16


def default_slots(cores: int | None = None) -> int:
    """4 slots per core (os.cpu_count() when not given), between 8 and 16; Tools → Scaling test measures the
    knee of a given machine and model and offers it instead."""
    cores = cores if cores is not None else (os.cpu_count() or 2)
    return max(SLOTS_DEFAULT_LOW, min(SLOTS_PER_CORE * max(1, cores), SLOTS_DEFAULT_HIGH))


# Sampling (SamplingParams). temperature 0 = greedy.
TEMPERATURE = Limit(0.0, 2.0, 0.8, step=0.05, decimals=2)
TOP_K = Limit(0, 1000, 40)  # 0 disables top-k
TOP_P = Limit(0.01, 1.0, 0.95, step=0.05, decimals=2)
MIN_P = Limit(0.0, 0.99, 0.05, step=0.01, decimals=2)
REPEAT_PENALTY = Limit(0.5, 2.0, 1.0, step=0.05, decimals=2)  # 1.0 = off
FREQUENCY_PENALTY = Limit(-2.0, 2.0, 0.0, step=0.1, decimals=2)
PRESENCE_PENALTY = Limit(-2.0, 2.0, 0.0, step=0.1, decimals=2)
PENALTY_LAST_N = Limit(0, 4096, 64)
SEED = Limit(0, 0xFFFFFFFF, 0)  # None (no seed) = a fresh random seed per request
# The samplers beyond those: llama-server's request names, defaults and meaning (common/common.h,
# common_params_sampling; docs/engine.md "Samplers"). Each default turns its sampler off.
DRY_MULTIPLIER = Limit(0.0, 5.0, 0.0, step=0.1, decimals=2)  # 0 = DRY off
DRY_BASE = Limit(1.0, 4.0, 1.75, step=0.05, decimals=2)  # penalty = multiplier * base ^ (length - allowed length)
DRY_ALLOWED_LENGTH = Limit(0, 100, 2)  # repeats up to this many tokens long go unpunished
DRY_PENALTY_LAST_N = Limit(0, 131072, 64)  # tokens scanned for repeats (0 = DRY off)
DRY_SEQUENCE_BREAKERS = ("\n", ":", "\"", "*")  # a repeat never runs across one of these
XTC_PROBABILITY = Limit(0.0, 1.0, 0.0, step=0.05, decimals=2)  # chance per token that XTC cuts (0 = off)
XTC_THRESHOLD = Limit(0.0, 1.0, 0.1, step=0.01, decimals=2)  # tokens at least this likely are cut (> 0.5 = off)
TYPICAL_P = Limit(0.0, 1.0, 1.0, step=0.05, decimals=2)  # locally typical sampling (1 = off)
MIROSTAT = Limit(0, 2, 0)  # 0 = off, 1 = Mirostat, 2 = Mirostat 2.0 (either replaces the rest of the chain)
MIROSTAT_TAU = Limit(0.0, 20.0, 5.0, step=0.5, decimals=2)  # target surprise (bits)
MIROSTAT_ETA = Limit(0.0, 1.0, 0.1, step=0.01, decimals=3)  # learning rate
TOP_N_SIGMA = Limit(-1.0, 10.0, -1.0, step=0.1, decimals=2)  # keep logits within n std devs of the top (<= 0 = off)
DYNATEMP_RANGE = Limit(0.0, 2.0, 0.0, step=0.05, decimals=2)  # temperature in [T - range, T + range] (0 = off)
DYNATEMP_EXPONENT = Limit(0.0, 10.0, 1.0, step=0.1, decimals=2)  # how entropy maps onto that range

# Requests (GenerationRequest).
MAX_TOKENS = Limit(1, 32768, 256)
LOGPROBS = Limit(0, 20, 0)  # alternatives reported per generated token; 0 = no log-probabilities
# The batch of an engine with a projector: llama-server's default ubatch, which holds a non-causal image whole
# (mtmd_decode_use_non_causal: Gemma 3's 256 rows go into one llama_decode; a smaller batch must refuse it).
VISION_BATCH = 512

# Speculative decoding (GenerationRequest.speculative, app/engine/speculative/drafts.py): whether a request drafts, how,
# and the most tokens drafted a step.
SPEC_MODES = ("off", "auto", "on")
SPEC_KINDS = ("ngram", "draft")  # n-gram lookup in the request's own tokens; a draft model (draft_model.py)
SPEC_KIND_DEFAULT = "ngram"
# A draft model's vocabulary must be the target's, as llama.cpp's common_speculative_are_compatible has it: sizes
# within this many tokens, and the same text for every token id from DRAFT_VOCAB_CHECK_START on.
DRAFT_VOCAB_MAX_SIZE_DIFFERENCE = 128
DRAFT_VOCAB_CHECK_START = 5
SPEC_MAX_DRAFT = Limit(1, 64, 48)  # the most (llama-server's n-gram drafts: 48); SpecState adapts below it
THINKING_BUDGET = Limit(0, 32768, 512)  # most thinking tokens of a request (None = no cap; the default a form offers)
# EngineConfig.reasoning_format (app/engine/chat/template/reasoning.py): split <think>…</think> from the answer,
# or leave it in.
REASONING_FORMATS = ("deepseek", "none")
REASONING_FORMAT_DEFAULT = "deepseek"

# Engine layout (EngineConfig); the settings dialog uses the same ranges.
SLOTS = Limit(1, 64, default_slots())  # default: the rule above (8 on 2 cores)
CONTEXT_PER_SLOT = Limit(64, 131072, 2048, step=256)
THREADS = Limit(1, 128, default_threads())
# KV cache element type (EngineConfig.kv_type): f16 is llama.cpp's default; q8_0 and q4_0 take ~53% and ~28% of its
# memory. A quantized V cache needs flash attention, which the engine then turns on (docs/engine.md, "KV cache").
KV_TYPES = tuple(_KV_TYPES)
KV_TYPE_DEFAULT = "f16"
# Layers offloaded to a GPU (EngineConfig.n_gpu_layers): "auto" (as many as fit the GPU's free memory), -1 all,
# 0 none, or N. A CPU build ignores it. GPU_LAYERS bounds an explicit N.
GPU_LAYERS_AUTO = "auto"
GPU_LAYERS_DEFAULT = GPU_LAYERS_AUTO
GPU_LAYERS = Limit(-1, 999, -1)
# Every "recent" throughput (StatsSnapshot.recent_decode_tps / recent_prefill_tps, engine and servers alike, and
# what the stats panel plots) counts the tokens of this many trailing seconds of wall clock (app/engine/rates.py).
RATE_WINDOW_S = 1.0
# Reproducible outputs (docs/engine.md, "Reproducible outputs"): a prompt advances in pieces of at most
# PREFILL_CHUNK tokens, each its own llama_decode, below ggml's CPU flash-attention tile (64 query tokens of one
# stream), whose tiled kernel sums in another order than the per-row kernel every other token meets.
REPRODUCIBLE_DEFAULT = True
PREFILL_CHUNK = 48
# How a new prompt shares steps with running streams (EngineConfig.mixed_step_factor: a step carrying prompt tokens
# takes at most this x a pure decode step; docs/engine.md, "The step budget"). At a factor f the streams' gap is
# about f x steady and the prompt's first token comes at best f / (f - 1) x its time alone: "smooth" keeps the
# running panes' gap lowest, "fast" gets the new prompt's first token out soonest.
PACING = {"smooth": 2.0, "balanced": 2.5, "fast": 4.0}
PACING_DEFAULT = "balanced"
