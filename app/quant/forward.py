"""Teacher-forced passes through one model: token sequences in, the logits of every scored position out.

One llama_context holds `n_seq` isolated sequences (as llama-perplexity sets it up: n_seq = n_batch / n_ctx);
a group of sequences is decoded in batches of at most n_batch tokens, sequences one after another, with only the
scored positions marked as outputs. The logits are handed out as numpy views over llama.cpp's own buffer (no
copy), valid until the next decode.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import llama_cpp
import numpy as np

from app.engine.context import TokenBatch
from app.engine.limits import default_threads
from app.engine.native import LlamaModel, init_backend
from app.models import InvalidModelError
from app.quant.types import QuantError, ScoredSequence, VocabularyMismatch

DEFAULT_BATCH = 2048  # llama-perplexity's default -b
DEFAULT_UBATCH = 512  # and -ub


def check_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise QuantError(f"{path} does not exist or is not a file.")
    return path


@contextmanager
def vocab_only(path: str | Path) -> Iterator:
    """A GGUF's llama_vocab, from llama.cpp's vocab-only load (no weights), freed on leaving."""
    path = check_file(path)
    init_backend()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    ptr = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not ptr:
        raise QuantError(f"llama.cpp could not read {path.name} as a model (truncated, damaged or unknown "
                         "architecture).")
    try:
        yield llama_cpp.llama_model_get_vocab(ptr)
    finally:
        llama_cpp.llama_model_free(ptr)


def vocabulary(path: str | Path) -> tuple[str, ...]:
    """Every token's text in a GGUF's vocabulary, read with llama.cpp's vocab-only load (no weights)."""
    with vocab_only(path) as vocab:
        n = llama_cpp.llama_vocab_n_tokens(vocab)
        return tuple(llama_cpp.llama_vocab_get_text(vocab, t) or b"" for t in range(n))


def check_vocabularies(reference: str | Path, candidates: list[str | Path]) -> None:
    """Raises VocabularyMismatch naming the first candidate whose vocabulary is not the reference's."""
    ref = vocabulary(reference)
    for cand in candidates:
        other = vocabulary(cand)
        if other != ref:
            detail = (f"{len(other):,} tokens against {len(ref):,}" if len(other) != len(ref) else
                      f"token {next(i for i, (a, b) in enumerate(zip(ref, other, strict=True)) if a != b)} differs")
            raise VocabularyMismatch(f"{Path(cand).name} does not share {Path(reference).name}'s vocabulary "
                                     f"({detail}), so their distributions cannot be compared.")


def tokenize_text(model: LlamaModel, text: str) -> np.ndarray:
    """A text as llama-perplexity tokenizes it: the vocabulary's BOS added when it asks, special tokens in the
    text left as plain text (common_tokenize(ctx, text, add_special=true, parse_special=false))."""
    data = text.encode("utf-8", "replace")
    capacity = len(data) + 8
    while True:
        buf = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(model.vocab, data, len(data), buf, capacity, True, False)
        if n >= 0:
            return np.frombuffer(buf, dtype=np.int32, count=n).copy()
        capacity = -n


class ForcedModel:
    """A model loaded for teacher-forced passes. `open(n_ctx, n_seq)` makes its context: `n_seq` sequences of up
    to `n_ctx` tokens per group.

    `decode(group)` yields `(index in group, first scored row of that sequence, logits rows × n_vocab)` after
    each llama_decode; the rows are the scored positions of that sequence in order. Close with `close()`."""

    def __init__(self, path: str | Path, threads: int | None = None):
        try:
            self.model = LlamaModel(check_file(path))
        except InvalidModelError as exc:
            raise QuantError(str(exc)) from exc
        self.path = str(path)
        self.n_vocab = self.model.n_vocab
        self.threads = threads or default_threads()
        self.ctx = None
        self.tokens_decoded = 0

    def open(self, n_ctx: int, n_seq: int = 1, n_batch: int = DEFAULT_BATCH,
             n_ubatch: int = DEFAULT_UBATCH) -> ForcedModel:
        """The context, as llama-perplexity makes it: n_seq x n_ctx cells, isolated sequences, n_batch tokens at
        most per decode (never more than the context), n_ubatch per graph."""
        if self.ctx:
            llama_cpp.llama_free(self.ctx)
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx * n_seq
        params.n_seq_max = n_seq
        params.n_batch = min(n_batch, n_ctx * n_seq)
        params.n_ubatch = min(n_ubatch, params.n_batch)
        params.n_threads = params.n_threads_batch = self.threads
        params.kv_unified = False
        params.no_perf = True
        params.embeddings = False
        self.ctx = llama_cpp.llama_init_from_model(self.model.ptr, params)
        if not self.ctx:
            raise QuantError(f"llama.cpp could not create a context of {n_seq} x {n_ctx} tokens for "
                             f"{Path(self.path).name}: not enough memory?")
        self.n_ctx = n_ctx
        self.n_seq = n_seq
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(self.ctx)
        self.n_batch = llama_cpp.llama_n_batch(self.ctx)  # exceeding it in one decode aborts the process
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = TokenBatch(self.n_batch)
        return self

    def close(self) -> None:
        if self.ctx:
            llama_cpp.llama_free(self.ctx)
            self.ctx = None
        self.model.close()

    def __enter__(self) -> ForcedModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def decode(self, group: list[ScoredSequence]) -> Iterator[tuple[int, int, np.ndarray]]:
        if len(group) > self.n_seq:
            raise ValueError(f"{len(group)} sequences in a group of {self.n_seq}")
        for seq in group:
            if len(seq.tokens) > self.n_ctx_seq:
                raise QuantError(f"a sequence of {len(seq.tokens)} tokens does not fit a context of "
                                 f"{self.n_ctx_seq}.")
        llama_cpp.llama_memory_clear(self.memory, True)
        batch = self.batch
        batch.clear()
        pending: list[tuple[int, int, int]] = []  # (sequence, first scored row, rows) of this batch's outputs
        for index, seq in enumerate(group):
            pos = 0
            n = len(seq.tokens)
            while pos < n:
                take = min(n - pos, self.n_batch - batch.n_tokens)
                start = batch.n_tokens
                batch.add(seq.tokens[pos:pos + take], pos, index, output_last=False)
                lo, hi = max(pos, seq.first), min(pos + take, n - 1)  # outputs: positions first .. n-2
                if hi > lo:
                    batch.logits[start + lo - pos:start + hi - pos] = 1
                    pending.append((index, lo - seq.first, hi - lo))
                pos += take
                if batch.n_tokens == self.n_batch:
                    yield from self._flush(pending)
                    pending = []
        if batch.n_tokens:
            yield from self._flush(pending)

    def _flush(self, pending: list[tuple[int, int, int]]) -> Iterator[tuple[int, int, np.ndarray]]:
        batch = self.batch
        batch.struct.n_tokens = batch.n_tokens
        rc = llama_cpp.llama_decode(self.ctx, batch.struct)
        if rc != 0:
            raise QuantError(f"llama.cpp failed to decode a batch of {batch.n_tokens} tokens (code {rc}).")
        self.tokens_decoded += batch.n_tokens
        batch.clear()
        total = sum(rows for _, _, rows in pending)
        if total:
            pointer = llama_cpp.llama_get_logits(self.ctx)
            address = ctypes.cast(pointer, ctypes.c_void_p).value
            logits = np.ctypeslib.as_array(ctypes.cast(address, ctypes.POINTER(ctypes.c_float)),
                                           shape=(total, self.n_vocab))
            row = 0
            for index, first_row, rows in pending:
                yield index, first_row, logits[row:row + rows]
                row += rows
