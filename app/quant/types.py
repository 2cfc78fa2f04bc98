"""What a fidelity run and a perplexity run hand back: sequences to score, per-token figures, summaries.

Plain dataclasses over numpy arrays, so the window can tint tokens by their KL divergence without copying.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class QuantError(ValueError):
    """A fidelity or perplexity run cannot start: the message is one sentence a user can act on (a missing or
    unreadable file, a text too short for the context, candidates with another vocabulary)."""


class Cancelled(QuantError):
    """The run was stopped by its caller (`stop()` returned true); every model it loaded is closed."""


class VocabularyMismatch(QuantError):
    """A candidate's vocabulary differs from the reference's, so its distributions cannot be compared."""


@dataclass(frozen=True)
class ScoredSequence:
    """One token sequence every model processes, teacher-forced.

    `tokens` are decoded from position 0 (a BOS already in place where the vocabulary adds one). The logits at
    positions `first` .. len-2 are scored: each predicts the next token of `tokens`, so the scored tokens are
    `tokens[first + 1:]`. A text chunk scores its second half (as llama-perplexity does); a prompt scores the
    reference's reply (`first` = the prompt's last token)."""

    tokens: np.ndarray  # int32
    first: int
    label: str = ""  # "chunk 3", a prompt's id

    @property
    def n_scored(self) -> int:
        return len(self.tokens) - 1 - self.first

    @property
    def scored_tokens(self) -> np.ndarray:
        return self.tokens[self.first + 1:]


@dataclass
class TokenFigures:
    """Per scored token of one sequence, one candidate against the reference (arrays of length n_scored).

    `kld`: KL(reference || candidate) over the full vocabulary (nats); `same_top`: the two argmaxes agree;
    `p_diff`: the candidate's probability of the text's token minus the reference's (llama-perplexity's Δp);
    `nll` and `nll_base`: -ln p of the text's token under the candidate and the reference."""

    kld: np.ndarray  # float32
    same_top: np.ndarray  # bool
    p_diff: np.ndarray  # float32
    nll: np.ndarray  # float64
    nll_base: np.ndarray  # float64

    @classmethod
    def empty(cls, n: int) -> TokenFigures:
        return cls(np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, np.float32), np.zeros(n),
                   np.zeros(n))


@dataclass(frozen=True)
class KldSummary:
    """The figures `llama-perplexity --kl-divergence` prints at the end, computed the same way.

    Percentages (`same_top_p`, `rms_dp`, `mean_dp`, `ln_ppl_correlation`) are in percent, as it prints them;
    `*_unc` are its ± uncertainties. PPL(Q) is the candidate's, PPL(base) the reference's, on the scored tokens."""

    tokens: int
    kld_mean: float
    kld_mean_unc: float
    kld_median: float
    kld_p99: float
    kld_p999: float
    kld_max: float
    same_top_p: float
    same_top_p_unc: float
    rms_dp: float
    rms_dp_unc: float
    mean_dp: float
    ppl: float
    ppl_base: float
    ppl_ratio: float
    ppl_ratio_unc: float
    ln_ppl_ratio: float
    ln_ppl_correlation: float


@dataclass
class CandidateFidelity:
    """One candidate against the reference: the summary and every sequence's per-token figures (in the order of
    `FidelityReport.sequences`)."""

    path: str
    summary: KldSummary
    figures: list[TokenFigures]
    tokens_per_second: float = 0.0  # this candidate's teacher-forced pass (decode + scoring)


@dataclass
class FidelityReport:
    """A whole run: the reference, its candidates best-first as given, the sequences scored and how the
    reference's distributions were kept (`path`): "memory" (reference and candidates loaded together, the
    reference's distributions of one group of sequences at a time in RAM) or "topk-file" (the reference alone
    first, its top-k log-probabilities and the rest of its mass streamed to a temporary file, then each candidate
    alone)."""

    reference: str
    candidates: list[CandidateFidelity]
    sequences: list[ScoredSequence]
    path: str
    n_ctx: int
    seconds: float = 0.0
    top_k: int = 0  # "topk-file": the reference's kept entries per token
    tokens_per_second: float = 0.0  # tokens decoded by every model / wall time, loads included
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """The `kld --json` document (shared contract): reference, candidates with their figures, plus the path."""
        return {
            "reference": self.reference,
            "path": self.path,
            "ctx": self.n_ctx,
            "sequences": len(self.sequences),
            "seconds": round(self.seconds, 3),
            "tokens_per_second": round(self.tokens_per_second, 1),
            "candidates": [{"path": c.path, **summary_json(c.summary)} for c in self.candidates],
        }


def summary_json(s: KldSummary) -> dict:
    return {"tokens": s.tokens, "kld_mean": s.kld_mean, "kld_mean_unc": s.kld_mean_unc, "kld_median": s.kld_median,
            "kld_p99": s.kld_p99, "kld_p999": s.kld_p999, "kld_max": s.kld_max, "same_top_p": s.same_top_p,
            "same_top_p_unc": s.same_top_p_unc, "rms_dp": s.rms_dp, "rms_dp_unc": s.rms_dp_unc,
            "mean_dp": s.mean_dp, "ppl": s.ppl, "ppl_base": s.ppl_base, "ppl_ratio": s.ppl_ratio,
            "ppl_ratio_unc": s.ppl_ratio_unc, "ln_ppl_ratio": s.ln_ppl_ratio,
            "ln_ppl_correlation": s.ln_ppl_correlation}


@dataclass(frozen=True)
class PerplexityResult:
    """`llama-perplexity`'s final estimate: PPL ± its uncertainty over `tokens` scored tokens in `chunks` chunks
    of `ctx` tokens (the second half of each chunk scored)."""

    ppl: float
    ppl_unc: float
    tokens: int
    ctx: int
    chunks: int
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"ppl": self.ppl, "ppl_unc": self.ppl_unc, "tokens": self.tokens, "ctx": self.ctx,
                "chunks": self.chunks, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class GreedyDivergence:
    """Free generation: a candidate's greedy reply to one prompt against the reference's. `first_divergence` is
    the index (in reply tokens) of the first token that differs, None when the replies are identical."""

    label: str
    reference_tokens: tuple[int, ...]
    candidate_tokens: tuple[int, ...]
    first_divergence: int | None
