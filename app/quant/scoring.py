"""Per-token scoring of logits rows, in numpy, as llama-perplexity scores them.

The reference's rows become normalised log-probabilities (`ReferenceRows`: kept in memory for one group of
sequences, or as their top-k and the rest of the mass for the file path); a candidate's rows are then scored
against them: KL(reference || candidate) over the tokens whose reference log-probability is above -16 (the
cut-off of perplexity.cpp), top-1 agreement, Δp and both NLLs of the text's token. Rows are split across
threads in blocks (numpy releases the GIL in these loops).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

LOG_PROB_FLOOR = -16.0  # perplexity.cpp: reference tokens at or below this log-probability add nothing to KLD
COVERAGE = 1.0 - 1e-4  # the file path keeps a token's most likely entries until they hold this much mass
MIN_KEPT = 32  # and at least this many
BLOCK = 8  # rows per task: bounds the temporaries (BLOCK x n_vocab floats each)


@dataclass
class ReferenceRows:
    """The reference's side of n scored positions. `log_probs` (n x n_vocab) in memory, or for the file path
    each position's most likely entries, `kept` of them (until they hold COVERAGE of the mass, at least MIN_KEPT,
    at most k), in `top_ids` and `top_log_probs` (n x k, padded past `kept`), with `rest` (the mass outside)."""

    argmax: np.ndarray  # int64
    nll: np.ndarray  # float64, -ln p(text token)
    log_probs: np.ndarray | None = None
    top_ids: np.ndarray | None = None
    top_log_probs: np.ndarray | None = None
    rest: np.ndarray | None = None
    kept: np.ndarray | None = None  # int32

    @classmethod
    def allocate(cls, n: int, n_vocab: int, top_k: int = 0, full: bool = True) -> ReferenceRows:
        """Rows for n positions: the full log-probabilities (`full`), their `top_k`, or (neither) the NLLs alone."""
        rows = cls(np.zeros(n, np.int64), np.zeros(n))
        if top_k:
            rows.top_ids = np.zeros((n, top_k), np.int32)
            rows.top_log_probs = np.zeros((n, top_k), np.float32)
            rows.rest = np.zeros(n, np.float64)
            rows.kept = np.zeros(n, np.int32)
        elif full:
            rows.log_probs = np.empty((n, n_vocab), np.float32)
        return rows


class Scorer:
    """The thread pool scoring blocks of rows. One per run; `close()` ends its threads."""

    def __init__(self, threads: int):
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="quant-score")

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def _blocks(self, n: int, fn) -> None:
        futures = [self.pool.submit(fn, lo, min(lo + BLOCK, n)) for lo in range(0, n, BLOCK)]
        for future in futures:
            future.result()

    def reference(self, logits: np.ndarray, tokens: np.ndarray, out: ReferenceRows, at: int) -> None:
        """Fill `out` rows at..at+len(logits) from the reference's logits; `tokens` are the texts' next tokens."""

        def block(lo: int, hi: int) -> None:
            lp, argmax = _log_softmax(logits[lo:hi])
            rows = np.arange(hi - lo)
            out.argmax[at + lo:at + hi] = argmax
            out.nll[at + lo:at + hi] = -lp[rows, tokens[lo:hi]]
            if out.log_probs is not None:
                out.log_probs[at + lo:at + hi] = lp
            elif out.top_ids is not None:
                k = out.top_ids.shape[1]
                ids = np.argpartition(lp, -k, axis=1)[:, -k:] if k < lp.shape[1] else np.tile(
                    np.arange(k), (hi - lo, 1))
                top = np.take_along_axis(lp, ids, axis=1)
                order = np.argsort(-top, axis=1)
                ids, top = np.take_along_axis(ids, order, axis=1), np.take_along_axis(top, order, axis=1)
                mass = np.cumsum(np.exp(top.astype(np.float64)), axis=1)
                kept = np.clip((mass < COVERAGE).sum(axis=1) + 1, min(MIN_KEPT, k), k)
                padding = np.arange(k)[None, :] >= kept[:, None]
                ids[padding] = 0
                top[padding] = -np.inf
                out.top_ids[at + lo:at + hi] = ids
                out.top_log_probs[at + lo:at + hi] = top
                out.kept[at + lo:at + hi] = kept
                # summed as the candidate's side sums them, so a model against itself scores exactly 0
                out.rest[at + lo:at + hi] = np.maximum(0.0, 1.0 - np.exp(top.astype(np.float64)).sum(axis=1))

        self._blocks(len(logits), block)

    def candidate(self, logits: np.ndarray, tokens: np.ndarray, ref: ReferenceRows, at: int, figures,
                  to: int) -> None:
        """Score the candidate's logits rows against reference rows at.. and write TokenFigures rows to.."""

        def block(lo: int, hi: int) -> None:
            lp, argmax = _log_softmax(logits[lo:hi])
            rows = np.arange(hi - lo)
            r = slice(at + lo, at + hi)
            w = slice(to + lo, to + hi)
            nll = -lp[rows, tokens[lo:hi]].astype(np.float64)
            nll_base = ref.nll[r]
            if ref.log_probs is not None:
                base = ref.log_probs[r]
                p = np.exp(base)
                p[base <= LOG_PROB_FLOOR] = 0.0
                np.subtract(base, lp, out=lp)
                lp *= p
                kld = lp.sum(axis=1, dtype=np.float64)
            else:
                ids, top = ref.top_ids[r], ref.top_log_probs[r]
                q = np.take_along_axis(lp, ids, axis=1).astype(np.float64)
                inside = np.isfinite(top)
                p = np.exp(top.astype(np.float64))
                with np.errstate(invalid="ignore"):
                    kld = np.where(top > LOG_PROB_FLOOR, p * (top - q), 0.0).sum(axis=1)
                rest = ref.rest[r]
                q_rest = np.maximum(1e-30, 1.0 - np.where(inside, np.exp(q), 0.0).sum(axis=1))
                with np.errstate(divide="ignore", invalid="ignore"):
                    kld += np.where(rest > 1e-12, rest * np.log(np.maximum(rest, 1e-30) / q_rest), 0.0)
            figures.kld[w] = kld
            figures.same_top[w] = argmax == ref.argmax[r]
            figures.p_diff[w] = np.exp(-nll) - np.exp(-nll_base)
            figures.nll[w] = nll
            figures.nll_base[w] = nll_base

        self._blocks(len(logits), block)


def _log_softmax(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log-probabilities as float32, argmax) of each row; the same float operations for every model, so a
    model against itself gives exactly 0."""
    argmax = logits.argmax(axis=1)
    top = np.take_along_axis(logits, argmax[:, None], axis=1)
    shifted = logits - top
    e = np.exp(shifted)
    lse = np.log(e.sum(axis=1, dtype=np.float64)).astype(np.float32)[:, None]
    shifted -= lse
    return shifted, argmax
