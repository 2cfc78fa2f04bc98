"""Per-request sampling settings (SamplingParams, llama-server's names and defaults) and the names of the samplers
beyond the basic ones. Part of the engine's public vocabulary (types.py re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine import limits


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling. temperature 0 means greedy: the most likely token after the repetition penalties
    (repeat, frequency, presence and DRY), whatever the other knobs say.

    Names, meanings and defaults are llama-server's (its request fields; `typical_p` is its `typ_p`), and every
    default leaves its sampler off. Defaults and ranges come from `app.engine.limits`, the same numbers the
    window's form uses. The chain runs in llama-server's order (app/engine/sampling/chain.py)."""

    temperature: float = limits.TEMPERATURE.default
    top_k: int = limits.TOP_K.default
    top_p: float = limits.TOP_P.default
    min_p: float = limits.MIN_P.default
    repeat_penalty: float = limits.REPEAT_PENALTY.default
    frequency_penalty: float = limits.FREQUENCY_PENALTY.default
    presence_penalty: float = limits.PRESENCE_PENALTY.default
    penalty_last_n: int = limits.PENALTY_LAST_N.default
    seed: int | None = None  # None: a fresh random seed per request
    dry_multiplier: float = limits.DRY_MULTIPLIER.default
    dry_base: float = limits.DRY_BASE.default
    dry_allowed_length: int = limits.DRY_ALLOWED_LENGTH.default
    dry_penalty_last_n: int = limits.DRY_PENALTY_LAST_N.default
    dry_sequence_breakers: tuple[str, ...] = limits.DRY_SEQUENCE_BREAKERS
    xtc_probability: float = limits.XTC_PROBABILITY.default
    xtc_threshold: float = limits.XTC_THRESHOLD.default
    typical_p: float = limits.TYPICAL_P.default
    mirostat: int = limits.MIROSTAT.default
    mirostat_tau: float = limits.MIROSTAT_TAU.default
    mirostat_eta: float = limits.MIROSTAT_ETA.default
    top_n_sigma: float = limits.TOP_N_SIGMA.default
    dynatemp_range: float = limits.DYNATEMP_RANGE.default
    dynatemp_exponent: float = limits.DYNATEMP_EXPONENT.default

    def __post_init__(self) -> None:
        for name, limit in _NUMBER_LIMITS.items():
            limit.check(name, getattr(self, name))
        if self.seed is not None:
            limits.SEED.check("seed", self.seed)
        if self.mirostat not in (0, 1, 2):
            raise ValueError(f"mirostat must be 0 (off), 1 or 2, got {self.mirostat}")
        breakers = self.dry_sequence_breakers
        if isinstance(breakers, str) or not isinstance(breakers, (list, tuple)) or not all(
                isinstance(b, str) and b for b in breakers) or not breakers:
            raise ValueError("dry_sequence_breakers must be a non-empty list of non-empty strings, "
                             f"got {breakers!r:.80}")
        object.__setattr__(self, "dry_sequence_breakers", tuple(breakers))  # a list from JSON: hashable again

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    @property
    def uses_penalties(self) -> bool:
        return self.repeat_penalty != 1.0 or self.frequency_penalty != 0.0 or self.presence_penalty != 0.0

    @property
    def uses_dry(self) -> bool:
        """DRY is on (llama.cpp's own test: a multiplier, a base of at least 1 and a window)."""
        return self.dry_multiplier != 0.0 and self.dry_base >= 1.0 and self.dry_penalty_last_n != 0


# The samplers' settings beyond temperature, top-k/p, min-p and the repetition penalties, in llama-server's order
# of its request fields: each is also a sweep axis, a server request field, a promptfoo config key (a local GGUF).
SAMPLER_FIELDS = ("dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers",
                  "xtc_probability", "xtc_threshold", "typical_p", "mirostat", "mirostat_tau", "mirostat_eta",
                  "top_n_sigma", "dynatemp_range", "dynatemp_exponent")
# The settings of the samplers that look at the tokens so far (penalties, DRY): the only ones a greedy pick sees.
HISTORY_FIELDS = ("repeat_penalty", "frequency_penalty", "presence_penalty", "penalty_last_n", "dry_multiplier",
                  "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers")
_NUMBER_LIMITS = {name: getattr(limits, name.upper()) for name in (
    "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "frequency_penalty", "presence_penalty",
    "penalty_last_n", "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "xtc_probability",
    "xtc_threshold", "typical_p", "mirostat", "mirostat_tau", "mirostat_eta", "top_n_sigma", "dynatemp_range",
    "dynatemp_exponent")}


def stop_strings(stop) -> tuple[str, ...]:
    """`stop` as the OpenAI API takes it: one string is one stop string (never its characters), or a list of
    strings; empty strings are dropped. Raises ValueError for anything else."""
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
        raise ValueError(f"stop must be a string or a list of strings, got {stop!r:.80}")
    return tuple(s for s in stop if s)
