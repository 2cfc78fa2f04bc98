"""A fidelity run: the reference and its candidates over the same sequences, teacher-forced, and the perplexity
of one model on a text, both with llama-perplexity's chunking.

Memory: when the reference and every candidate fit in RAM together (`available_ram()`, which honours
$CHORUS_MEMORY_LIMIT), all are loaded and each group of sequences goes through the reference, then through each
candidate, with only that group's reference log-probabilities kept ("memory"). Otherwise the reference runs
alone first and streams its top-k log-probabilities and the rest of its mass per token to a temporary file,
then each candidate runs alone against it ("topk-file").
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from app.engine.limits import default_threads
from app.models import estimate_memory
from app.models.fit import available_ram
from app.quant.forward import DEFAULT_BATCH, ForcedModel, check_file, check_vocabularies, tokenize_text
from app.quant.scoring import ReferenceRows, Scorer
from app.quant.summary import perplexity_of, summarize
from app.quant.types import (
    Cancelled,
    CandidateFidelity,
    FidelityReport,
    QuantError,
    ScoredSequence,
    TokenFigures,
)

TOP_K = 4096  # the most entries of the reference kept per token on the file path (fewer where they hold the mass)
LLAMA_MAX_SEQ = 256  # llama.cpp's limit on sequences in one context
MAX_SEQS = 16  # prompts a decode: each sequence takes at least 256 KV cells, however short
Progress = Callable[[int, int], None]  # (sequences done across every model, total)


class _Ticker:
    """Counts groups done across every model, reports them, and stops the run when asked (between decodes)."""

    def __init__(self, total: int, progress: Progress | None, stop: Callable[[], bool] | None):
        self.total, self.done, self.progress, self.stop = total, 0, progress, stop

    def __call__(self) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total)
        if self.stop and self.stop():
            raise Cancelled("the run was stopped.")


def seqs_per_context(n_ctx: int, n_batch: int = DEFAULT_BATCH) -> int:
    """Sequences decoded together, as llama-perplexity sets -np: n_batch / n_ctx, at least 1. Keep it so:
    llama.cpp splits a batch of several sequences into ubatches taking the same number of tokens from each, so
    the grouping changes the floating-point path, and 4 chunks of 128 a decode instead of 16 moved SmolLM2's
    perplexity by 0.56 %."""
    return max(1, n_batch // n_ctx)


def text_chunks(tokens: np.ndarray, n_ctx: int, bos: int | None) -> list[ScoredSequence]:
    """llama-perplexity's chunks of a tokenized text: floor(len / n_ctx) chunks of n_ctx tokens, the first token
    of each replaced by BOS when the vocabulary adds one, the second half scored. Raises QuantError when the
    text has fewer than 2 x n_ctx tokens (llama-perplexity refuses it too)."""
    if n_ctx < 8:
        raise QuantError(f"a context of {n_ctx} tokens is too small: use at least 8.")
    if len(tokens) < 2 * n_ctx:
        raise QuantError(f"the text has {len(tokens)} tokens; a context of {n_ctx} needs at least {2 * n_ctx} "
                         "(two chunks): use a longer text or a smaller --ctx.")
    chunks = []
    for i in range(len(tokens) // n_ctx):
        chunk = np.array(tokens[i * n_ctx:(i + 1) * n_ctx], np.int32)
        if bos is not None:
            chunk[0] = bos
        chunks.append(ScoredSequence(chunk, n_ctx // 2, f"chunk {i + 1}"))
    return chunks


def read_text(path: str | Path) -> str:
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise QuantError(f"cannot read {path}: {exc.strerror or exc}.") from exc


def tokenize_chunks(model: ForcedModel, text: str, n_ctx: int) -> list[ScoredSequence]:
    tokens = tokenize_text(model.model, text)
    return text_chunks(tokens, n_ctx, model.model.bos_id if model.model.add_bos else None)


def _groups(sequences: Sequence[ScoredSequence], n_seq: int) -> list[list[int]]:
    return [list(range(i, min(i + n_seq, len(sequences)))) for i in range(0, len(sequences), n_seq)]


def _fits_together(paths: list[str], n_vocab: int, n_ctx: int, n_seq: int, n_scored: int, n_batch: int) -> bool:
    """Every model's estimate (weights, KV, compute), each context's logits buffer (n_batch rows at most) and
    one group's reference log-probabilities, against the RAM free now (`available_ram()`)."""
    need = 0
    for path in paths:
        try:
            need += estimate_memory(path, n_seq, n_ctx).total
        except ValueError:
            need += Path(path).stat().st_size
    need += 4 * n_vocab * (n_scored + min(n_batch, n_ctx * n_seq) * len(paths))
    return need < available_ram()


def compare(reference: str | Path, candidates: Sequence[str | Path], *, text: str | None = None,
            sequences: Sequence[ScoredSequence] | None = None, n_ctx: int = 512, n_batch: int = DEFAULT_BATCH,
            threads: int | None = None, path: str = "auto", top_k: int = TOP_K,
            progress: Progress | None = None, stop: Callable[[], bool] | None = None) -> FidelityReport:
    """KL divergence, top-1 agreement and Δp of each candidate against the reference, per token and summarised
    as `llama-perplexity --kl-divergence` does.

    Give either `text` (chunked as llama-perplexity chunks it, with the reference's tokenizer, n_ctx tokens per
    chunk) or `sequences` (e.g. from `prompt_sequences`; the context is then sized to the longest, and n_ctx is
    not used). `path`: "auto" (memory when everything fits, else the top-k file), "memory" or "topk-file".
    `progress(done, total)` is called after each group of sequences of each model; `stop()` is asked then too,
    and when it returns true the run ends with Cancelled (every model closed). Safe to run on a worker thread.
    Raises QuantError (VocabularyMismatch for another vocabulary, before any model is loaded) when the inputs
    cannot be used."""
    if (text is None) == (sequences is None):
        raise ValueError("give either text or sequences")
    if not candidates:
        raise QuantError("give at least one candidate model to compare with the reference.")
    reference = str(check_file(reference))
    candidates = [str(check_file(c)) for c in candidates]
    check_vocabularies(reference, candidates)
    threads = threads or default_threads()
    started = time.perf_counter()
    if sequences is not None:
        sequences = list(sequences)
        if not sequences:
            raise QuantError("there is nothing to score: no sequences.")
        n_ctx = max(len(s.tokens) for s in sequences)  # as many sequences a decode as the longest allows
    scorer = Scorer(threads)
    ref_model = ForcedModel(reference, threads)
    try:
        if sequences is None:
            sequences = tokenize_chunks(ref_model, text, n_ctx)
        n_seq = min(seqs_per_context(n_ctx, n_batch), len(sequences), MAX_SEQS if text is None else LLAMA_MAX_SEQ)
        ref_model.open(n_ctx, n_seq, n_batch)
        groups = _groups(sequences, n_seq)
        biggest = max(sum(sequences[i].n_scored for i in g) for g in groups)
        if path == "auto":
            fits = _fits_together([reference, *candidates], ref_model.n_vocab, n_ctx, n_seq, biggest, n_batch)
            path = "memory" if fits else "topk-file"
        if path not in ("memory", "topk-file"):
            raise ValueError(f"unknown path {path!r}")
        figures = [[TokenFigures.empty(s.n_scored) for s in sequences] for _ in candidates]
        rates = [0.0] * len(candidates)
        tick = _Ticker(len(groups) * (1 + len(candidates)), progress, stop)
        if path == "memory":
            rates = _run_in_memory(ref_model, candidates, sequences, groups, figures, n_ctx, n_seq, n_batch,
                                   threads, scorer, tick)
        else:
            rates = _run_through_file(ref_model, candidates, sequences, groups, figures, n_ctx, n_seq, n_batch,
                                      threads, scorer, top_k, tick)
            ref_model = None
    finally:
        if ref_model is not None:
            ref_model.close()
        scorer.close()
    seconds = time.perf_counter() - started
    decoded = sum(len(s.tokens) for s in sequences) * (1 + len(candidates))
    results = [CandidateFidelity(c, summarize(f), f, rate) for c, f, rate in zip(candidates, figures, rates,
                                                                                 strict=True)]
    return FidelityReport(reference, results, list(sequences), path, n_ctx, seconds,
                          top_k if path == "topk-file" else 0, decoded / seconds if seconds else 0.0)


def _offsets(sequences: Sequence[ScoredSequence], group: list[int]) -> list[int]:
    offsets, at = [], 0
    for i in group:
        offsets.append(at)
        at += sequences[i].n_scored
    return offsets


def _reference_group(model: ForcedModel, sequences, group, scorer: Scorer, top_k: int = 0,
                     full: bool = True) -> ReferenceRows:
    offsets = _offsets(sequences, group)
    n = sum(sequences[i].n_scored for i in group)
    scratch = scorer.probs_buffer(n, model.n_vocab) if full and not top_k else None
    rows = ReferenceRows.allocate(n, model.n_vocab, top_k, full, scratch)
    for index, first_row, logits in model.decode([sequences[i] for i in group]):
        seq = sequences[group[index]]
        next_tokens = seq.scored_tokens[first_row:first_row + len(logits)]
        scorer.reference(logits, next_tokens, rows, offsets[index] + first_row)
    return rows


def _candidate_group(model: ForcedModel, sequences, group, scorer: Scorer, ref: ReferenceRows,
                     figures: list[TokenFigures]) -> None:
    offsets = _offsets(sequences, group)
    for index, first_row, logits in model.decode([sequences[i] for i in group]):
        seq = sequences[group[index]]
        next_tokens = seq.scored_tokens[first_row:first_row + len(logits)]
        scorer.candidate(logits, next_tokens, ref, offsets[index] + first_row, figures[group[index]], first_row)


def _run_in_memory(ref_model, candidates, sequences, groups, figures, n_ctx, n_seq, n_batch, threads, scorer,
                   tick: _Ticker) -> list[float]:
    models = []
    try:
        for cand in candidates:
            models.append(ForcedModel(cand, threads))
            models[-1].open(n_ctx, n_seq, n_batch)
        spent = [0.0] * len(models)
        for group in groups:
            ref = _reference_group(ref_model, sequences, group, scorer)
            tick()
            for k, model in enumerate(models):
                t0 = time.perf_counter()
                _candidate_group(model, sequences, group, scorer, ref, figures[k])
                spent[k] += time.perf_counter() - t0
                tick()
            del ref
    finally:
        for model in models:
            model.close()
    n_tokens = sum(len(s.tokens) for s in sequences)
    return [n_tokens / s if s else 0.0 for s in spent]


def _run_through_file(ref_model, candidates, sequences, groups, figures, n_ctx, n_seq, n_batch, threads, scorer,
                      top_k, tick: _Ticker) -> list[float]:
    n_vocab = ref_model.n_vocab
    spent = [0.0] * len(candidates)
    with tempfile.TemporaryFile(prefix="chorus-kld-") as store:
        try:
            for group in groups:
                ref = _reference_group(ref_model, sequences, group, scorer, top_k)
                for array in (ref.argmax, ref.nll, ref.rest, ref.kept):
                    store.write(np.ascontiguousarray(array).tobytes())
                used = np.arange(top_k)[None, :] < ref.kept[:, None]  # ragged: only the kept entries
                store.write(ref.top_ids[used].tobytes())
                store.write(ref.top_log_probs[used].tobytes())
                tick()
        finally:
            ref_model.close()
        for k, cand in enumerate(candidates):
            store.seek(0)
            with ForcedModel(cand, threads) as model:
                model.open(n_ctx, n_seq, n_batch)
                if model.n_vocab != n_vocab:
                    raise QuantError(f"{Path(cand).name} has {model.n_vocab} tokens, the reference {n_vocab}.")
                t0 = time.perf_counter()
                for group in groups:
                    n = sum(sequences[i].n_scored for i in group)
                    ref = _read_rows(store, n, top_k)
                    _candidate_group(model, sequences, group, scorer, ref, figures[k])
                    tick()
                spent[k] = time.perf_counter() - t0
    n_tokens = sum(len(s.tokens) for s in sequences)
    return [n_tokens / s if s else 0.0 for s in spent]


def _read_rows(store, n: int, top_k: int) -> ReferenceRows:
    """One group's reference rows as `_run_through_file` wrote them (the kept entries padded back to top_k)."""
    argmax, nll, rest, kept = (_read(store, np.int64, n), _read(store, np.float64, n), _read(store, np.float64, n),
                               _read(store, np.int32, n))
    used = np.arange(top_k)[None, :] < kept[:, None]
    ids = np.zeros((n, top_k), np.int32)
    top = np.full((n, top_k), -np.inf, np.float32)
    total = int(kept.sum())
    ids[used] = _read(store, np.int32, total)
    top[used] = _read(store, np.float32, total)
    return ReferenceRows(argmax, nll, top_ids=ids, top_log_probs=top, rest=rest, kept=kept)


def _read(store, dtype, count: int) -> np.ndarray:
    size = np.dtype(dtype).itemsize * count
    data = store.read(size)
    if len(data) != size:
        raise QuantError("the temporary file of the reference's log-probabilities was cut short.")
    return np.frombuffer(data, dtype=dtype).copy()


def perplexity(model_path: str | Path, text: str, *, n_ctx: int = 512, n_batch: int = DEFAULT_BATCH,
               threads: int | None = None, progress: Progress | None = None,
               stop: Callable[[], bool] | None = None):
    """The perplexity of one model on a text, as `llama-perplexity -f FILE -c n_ctx` computes it (chunks of
    n_ctx tokens, BOS first, the second half of each scored). Returns a PerplexityResult; raises QuantError
    (Cancelled when `stop()` returns true between groups)."""
    started = time.perf_counter()
    threads = threads or default_threads()
    scorer = Scorer(threads)
    try:
        with ForcedModel(check_file(model_path), threads) as model:
            sequences = tokenize_chunks(model, text, n_ctx)
            n_seq = min(seqs_per_context(n_ctx, n_batch), len(sequences), LLAMA_MAX_SEQ)
            model.open(n_ctx, n_seq, n_batch)
            groups = _groups(sequences, n_seq)
            nll, tick = [], _Ticker(len(groups), progress, stop)
            for group in groups:
                nll.append(_reference_group(model, sequences, group, scorer, full=False).nll)
                tick()
    finally:
        scorer.close()
    return perplexity_of(np.concatenate(nll), n_ctx, len(sequences), time.perf_counter() - started)
