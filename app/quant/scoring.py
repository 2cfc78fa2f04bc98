"""Per-token scoring of logits rows, in numpy, as llama-perplexity scores them.

The reference's rows are kept per group of sequences (`ReferenceRows`): in memory as probabilities, or for the
file path as each position's most likely log-probabilities and the rest of the mass. A candidate's rows are then
scored against them: KL(reference || candidate) over the tokens whose reference log-probability is above -16
(the cut-off of perplexity.cpp), top-1 agreement, Δp and both NLLs of the text's token. Rows are split across
threads in blocks (numpy releases the GIL in these loops).

In memory, KL = Σ p·(ln p − ln q) is computed as (Σ p·s_ref − lse_ref·Σp) − (Σ p·s − lse·Σp), where s are a
row's logits less their maximum and lse the log of Σ exp(s): the reference's part is one number per row, so a
candidate's row costs one pass for its normaliser and one dot product, and a model against itself gives exactly
0 (the same operations on the same numbers).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

LOG_PROB_FLOOR = -16.0  # perplexity.cpp: reference tokens at or below this log-probability add nothing to KLD
COVERAGE = 1.0 - 1e-4  # the file path keeps a token's most likely entries until they hold this much mass
MIN_KEPT = 32  # and at least this many
BLOCK = 8  # rows per task: bounds the temporaries (BLOCK x n_vocab floats each)


@dataclass
class ReferenceRows:
    """The reference's side of n scored positions.

    In memory: `probs` (n x n_vocab, zero at or below the floor), `mass` (Σ probs per row) and `cross` (Σ probs ·
    shifted logits − lse · mass per row, the reference's own part of the KL). For the file path: each position's
    most likely entries, `kept` of them (until they hold COVERAGE of the mass, at least MIN_KEPT, at most k), in
    `top_ids` and `top_log_probs` (n x k, padded past `kept` with id 0 and -inf), with `rest` (the mass
    outside). With neither, the NLLs alone (a perplexity run)."""

    argmax: np.ndarray  # int64
    nll: np.ndarray  # float64, -ln p(text token)
    probs: np.ndarray | None = None
    mass: np.ndarray | None = None
    cross: np.ndarray | None = None
    top_ids: np.ndarray | None = None
    top_log_probs: np.ndarray | None = None
    rest: np.ndarray | None = None
    kept: np.ndarray | None = None  # int32

    @classmethod
    def allocate(cls, n: int, n_vocab: int, top_k: int = 0, full: bool = True,
                 scratch: np.ndarray | None = None) -> ReferenceRows:
        """Rows for n positions: the full distributions (`full`; in `scratch` when given, a reused n x n_vocab
        float32 array), their `top_k`, or (neither) the NLLs alone."""
        rows = cls(np.zeros(n, np.int64), np.zeros(n))
        if top_k:
            rows.top_ids = np.zeros((n, top_k), np.int32)
            rows.top_log_probs = np.zeros((n, top_k), np.float32)
            rows.rest = np.zeros(n, np.float64)
            rows.kept = np.zeros(n, np.int32)
        elif full:
            rows.probs = np.empty((n, n_vocab), np.float32) if scratch is None else scratch
            rows.mass = np.zeros(n, np.float64)
            rows.cross = np.zeros(n, np.float64)
        return rows


class Scorer:
    """The thread pool scoring blocks of rows. One per run; `close()` ends its threads."""

    def __init__(self, threads: int):
        self.pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="quant-score")
        self._local = threading.local()  # each worker's scratch rows, reused (fresh ones cost page faults)
        self._probs = np.empty((0, 0), np.float32)

    def probs_buffer(self, n: int, n_vocab: int) -> np.ndarray:
        """An n x n_vocab float32 array for one group's reference probabilities, the same memory every group (its
        rows from the previous group are dead by then)."""
        if self._probs.shape[0] < n or self._probs.shape[1] != n_vocab:
            self._probs = np.empty((n, n_vocab), np.float32)
        return self._probs[:n]

    def _scratch(self, n_vocab: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        local = self._local
        if getattr(local, "n_vocab", None) != n_vocab:
            local.n_vocab = n_vocab
            local.buffers = (np.empty((BLOCK, n_vocab), np.float32), np.empty((BLOCK, n_vocab), np.float32),
                             np.empty((BLOCK, n_vocab), bool))
        return local.buffers

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def _blocks(self, n: int, fn) -> None:
        futures = [self.pool.submit(fn, lo, min(lo + BLOCK, n)) for lo in range(0, n, BLOCK)]
        for future in futures:
            future.result()

    def reference(self, logits: np.ndarray, tokens: np.ndarray, out: ReferenceRows, at: int) -> None:
        """Fill `out` rows at..at+len(logits) from the reference's logits; `tokens` are the texts' next tokens."""

        def block(lo: int, hi: int) -> None:
            shift_buf, e_buf, mask_buf = self._scratch(logits.shape[1])
            shifted, e, lse, argmax = _normalise(logits[lo:hi], shift_buf, e_buf)
            rows = np.arange(hi - lo)
            w = slice(at + lo, at + hi)
            out.argmax[w] = argmax
            out.nll[w] = lse - shifted[rows, tokens[lo:hi]]
            if out.probs is not None:
                probs = out.probs[w]
                np.multiply(e, (1.0 / np.exp(lse)).astype(np.float32)[:, None], out=probs)
                keep = mask_buf[:hi - lo]  # a multiply by the mask: np.putmask is ~25x slower on these rows
                np.greater(shifted, (lse + LOG_PROB_FLOOR).astype(np.float32)[:, None], out=keep)
                np.multiply(probs, keep, out=probs)
                out.mass[w] = probs.sum(axis=1, dtype=np.float64)
                out.cross[w] = _cross(probs, shifted, lse, out.mass[w])
            elif out.top_ids is not None:
                _keep_top(shifted - lse.astype(np.float32)[:, None], out, w)

        self._blocks(len(logits), block)

    def candidate(self, logits: np.ndarray, tokens: np.ndarray, ref: ReferenceRows, at: int, figures,
                  to: int) -> None:
        """Score the candidate's logits rows against reference rows at.. and write TokenFigures rows to.."""

        def block(lo: int, hi: int) -> None:
            shift_buf, e_buf, _ = self._scratch(logits.shape[1])
            shifted, _, lse, argmax = _normalise(logits[lo:hi], shift_buf, e_buf)
            rows = np.arange(hi - lo)
            r = slice(at + lo, at + hi)
            w = slice(to + lo, to + hi)
            nll = lse - shifted[rows, tokens[lo:hi]]
            nll_base = ref.nll[r]
            if ref.probs is not None:
                kld = ref.cross[r] - _cross(ref.probs[r], shifted, lse, ref.mass[r])
            else:
                kld = _kld_top(shifted - lse.astype(np.float32)[:, None], ref, r)
            figures.kld[w] = kld
            figures.same_top[w] = argmax == ref.argmax[r]
            figures.p_diff[w] = np.exp(-nll) - np.exp(-nll_base)
            figures.nll[w] = nll
            figures.nll_base[w] = nll_base

        self._blocks(len(logits), block)


def _normalise(logits: np.ndarray, shift_buf: np.ndarray, e_buf: np.ndarray):
    """Each row's logits less their maximum (float32, in `shift_buf`), their exp (in `e_buf`), lse = ln Σ exp
    (float64) and the argmax (the first maximum, as perplexity.cpp takes it)."""
    n = logits.shape[0]
    argmax = logits.argmax(axis=1)
    shifted, e = shift_buf[:n], e_buf[:n]
    np.subtract(logits, np.take_along_axis(logits, argmax[:, None], axis=1), out=shifted)
    np.exp(shifted, out=e)
    lse = np.log(e.sum(axis=1, dtype=np.float64))
    return shifted, e, lse, argmax


def _cross(probs: np.ndarray, shifted: np.ndarray, lse: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """Σ p · ln q per row, from q's shifted logits and lse: Σ p·s − lse·Σp (one dot product a row)."""
    dots = np.array([np.dot(p, s) for p, s in zip(probs, shifted, strict=True)], np.float64)
    return dots - lse * mass


def _keep_top(lp: np.ndarray, out: ReferenceRows, w: slice) -> None:
    k = out.top_ids.shape[1]
    n = lp.shape[0]
    ids = np.argpartition(lp, -k, axis=1)[:, -k:] if k < lp.shape[1] else np.tile(np.arange(k), (n, 1))
    top = np.take_along_axis(lp, ids, axis=1)
    order = np.argsort(-top, axis=1)
    ids, top = np.take_along_axis(ids, order, axis=1), np.take_along_axis(top, order, axis=1)
    mass = np.cumsum(np.exp(top.astype(np.float64)), axis=1)
    kept = np.clip((mass < COVERAGE).sum(axis=1) + 1, min(MIN_KEPT, k), k)
    padding = np.arange(k)[None, :] >= kept[:, None]
    ids[padding] = 0
    top[padding] = -np.inf
    out.top_ids[w] = ids
    out.top_log_probs[w] = top
    out.kept[w] = kept
    # summed as the candidate's side sums them, so a model against itself scores exactly 0
    out.rest[w] = np.maximum(0.0, 1.0 - np.exp(top.astype(np.float64)).sum(axis=1))


def _kld_top(lp: np.ndarray, ref: ReferenceRows, r: slice) -> np.ndarray:
    """KL over the reference's kept entries, plus the mass outside them as one lump (a slight underestimate)."""
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
    return kld
