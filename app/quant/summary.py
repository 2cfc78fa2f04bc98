"""Per-token figures → the summary `llama-perplexity --kl-divergence` prints, with its formulas: the mean and its
uncertainty (`mean_and_uncertainty`), the covariance of ln PPL(Q) and ln PPL(base), the median as the mean of
the two middle values, percentiles interpolated between sorted float values (tools/perplexity/perplexity.cpp).
"""

from __future__ import annotations

import math

import numpy as np

from app.quant.types import KldSummary, PerplexityResult, TokenFigures


def _mean_unc(total: float, total2: float, count: int) -> tuple[float, float]:
    if count < 1:
        return 0.0, 0.0
    f = total / count
    df = total2 / count - f * f
    return f, math.sqrt(df / (count - 1)) if df > 0 and count > 10 else 0.0


def _covariance(a: float, b: float, ab: float, count: int) -> float:
    if count < 10:
        return 0.0
    return (ab / count - (a / count) * (b / count)) / (count - 1)


def _percentile(values: np.ndarray, fraction: float) -> float:
    """`values` sorted; llama-perplexity's interpolation, in float as it computes it."""
    if fraction <= 0:
        return float(values[0])
    if fraction >= 1:
        return float(values[-1])
    p = np.float32(fraction) * np.float32(len(values) - 1)
    ip = int(p)
    p -= ip
    return float((1 - p) * values[ip] + p * values[min(ip + 1, len(values) - 1)])


def _median(values: np.ndarray) -> float:
    n = len(values)
    return float(0.5 * (values[n // 2] + values[n // 2 - 1])) if n % 2 == 0 else float(values[n // 2])


def summarize(figures: list[TokenFigures]) -> KldSummary:
    """One candidate's summary over every scored token of every sequence."""
    kld = np.concatenate([f.kld for f in figures]).astype(np.float32) if figures else np.zeros(0, np.float32)
    count = len(kld)
    if count == 0:
        nan = float("nan")
        return KldSummary(0, *([nan] * 17))
    same = int(sum(int(f.same_top.sum()) for f in figures))
    p_diff = np.concatenate([f.p_diff for f in figures]).astype(np.float64)
    nll = np.concatenate([f.nll for f in figures]).astype(np.float64)
    nll_base = np.concatenate([f.nll_base for f in figures]).astype(np.float64)
    kld64 = kld.astype(np.float64)

    log_ppl, log_ppl_unc = _mean_unc(float(nll.sum()), float((nll * nll).sum()), count)
    log_base, log_base_unc = _mean_unc(float(nll_base.sum()), float((nll_base * nll_base).sum()), count)
    cov = _covariance(float(nll.sum()), float(nll_base.sum()), float((nll * nll_base).sum()), count)
    denominator = log_ppl_unc * log_base_unc
    correlation = cov / denominator if denominator > 0 else float("nan")
    ln_ratio = log_ppl - log_base
    ln_ratio_unc = math.sqrt(max(0.0, log_ppl_unc ** 2 + log_base_unc ** 2 - 2.0 * cov))
    ratio = math.exp(ln_ratio)

    kld_mean, kld_unc = _mean_unc(float(kld64.sum()), float((kld64 * kld64).sum()), count)
    p2 = p_diff * p_diff
    mse, mse_unc = _mean_unc(float(p2.sum()), float((p2 * p2).sum()), count)
    rms = math.sqrt(mse)
    rms_unc = 0.5 / rms * mse_unc if rms > 0 else 0.0
    top = same / count
    top_unc = math.sqrt(top * (1 - top) / (count - 1)) if count > 1 else 0.0
    sorted_kld = np.sort(kld)
    return KldSummary(
        tokens=count, kld_mean=float(kld_mean), kld_mean_unc=kld_unc, kld_median=_median(sorted_kld),
        kld_p99=_percentile(sorted_kld, 0.99), kld_p999=_percentile(sorted_kld, 0.999),
        kld_max=float(sorted_kld[-1]), same_top_p=100.0 * top, same_top_p_unc=100.0 * top_unc,
        rms_dp=100.0 * rms, rms_dp_unc=100.0 * rms_unc, mean_dp=100.0 * float(p_diff.mean()),
        ppl=math.exp(log_ppl), ppl_base=math.exp(log_base), ppl_ratio=ratio, ppl_ratio_unc=ratio * ln_ratio_unc,
        ln_ppl_ratio=float(ln_ratio), ln_ppl_correlation=float(100.0 * correlation))


def perplexity_of(nll: np.ndarray, ctx: int, chunks: int, seconds: float = 0.0) -> PerplexityResult:
    """llama-perplexity's final estimate from the scored tokens' negative log-likelihoods."""
    count = len(nll)
    nll = nll.astype(np.float64)
    mean = float(nll.sum()) / count
    var = float((nll * nll).sum()) / count - mean * mean
    ppl = math.exp(mean)
    unc = math.sqrt(var / (count - 1)) * ppl if var > 0 and count > 1 else 0.0
    return PerplexityResult(ppl=ppl, ppl_unc=unc, tokens=count, ctx=ctx, chunks=chunks, seconds=seconds)
