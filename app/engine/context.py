"""The shared llama_context and the one reusable batch every step is written into.

The batch struct points at numpy arrays we own, so filling a step is a few slice assignments instead of
per-element ctypes writes. llama_decode copies the batch on each call, so the arrays are reusable at once.
"""

from __future__ import annotations

import contextlib
import ctypes

import llama_cpp
import numpy as np

from app.engine.native import LlamaModel
from app.engine.reproducible import row_kernels
from app.engine.types import EngineConfig
from app.models.memory import KV_TYPES, kv_cells

_I32P = ctypes.POINTER(ctypes.c_int32)


class BatchBuffers:
    """A llama_batch of fixed capacity over numpy buffers (positions, one seq id per row, output flags); the rows'
    content (token ids or embeddings) is the subclass's."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.pos = np.zeros(capacity, np.int32)
        self.seq = np.zeros(capacity, np.int32)
        self.logits = np.zeros(capacity, np.int8)
        self._n_seq_id = np.ones(capacity, np.int32)
        # seq_id is an array of pointers, one per token, each at that token's entry in self.seq.
        base = self.seq.ctypes.data
        self._seq_ptrs = (_I32P * (capacity + 1))(*[ctypes.cast(base + 4 * i, _I32P) for i in range(capacity)])
        self.struct = llama_cpp.llama_batch()
        self.struct.token = None
        self.struct.embd = None
        self.struct.pos = self.pos.ctypes.data_as(_I32P)
        self.struct.n_seq_id = self._n_seq_id.ctypes.data_as(_I32P)
        self.struct.seq_id = ctypes.cast(self._seq_ptrs, ctypes.POINTER(_I32P))
        self.struct.logits = self.logits.ctypes.data_as(ctypes.POINTER(ctypes.c_int8))


class TokenBatch(BatchBuffers):
    """A llama_batch of token ids."""

    def __init__(self, capacity: int):
        super().__init__(capacity)
        self.token = np.zeros(capacity, np.int32)
        self.struct.token = self.token.ctypes.data_as(_I32P)
        self.n_tokens = 0

    def clear(self) -> None:
        self.n_tokens = 0

    def add(self, tokens, first_pos: int, seq_id: int, output_last: bool, output_all: bool = False) -> int:
        """Append a run of one sequence's tokens; returns the batch index of the last one. `output_all`: every
        token is an output (a speculative draft being verified)."""
        n = len(tokens)
        start, end = self.n_tokens, self.n_tokens + n
        if end > self.capacity:
            raise OverflowError(f"batch overflow: {end} > {self.capacity} tokens")
        self.token[start:end] = tokens
        self.pos[start:end] = np.arange(first_pos, first_pos + n, dtype=np.int32)
        self.seq[start:end] = seq_id
        self.logits[start:end] = 1 if output_all else 0
        if output_last:
            self.logits[end - 1] = 1
        self.n_tokens = end
        return end - 1


class LlamaContext:
    """One llama_context with `n_slots` isolated KV streams (kv_unified=False: greedy parity holds, and it
    measured faster than unified on these CPUs; see ../shared/notes)."""

    def __init__(self, model: LlamaModel, config: EngineConfig):
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = kv_cells(config.n_ctx_per_slot) * config.n_slots
        params.n_seq_max = config.n_slots
        params.n_batch = params.n_ubatch = config.batch_capacity  # one graph per step where possible
        params.n_threads = config.n_threads
        params.n_threads_batch = config.n_threads_batch or config.n_threads
        self._n_threads, self._n_threads_batch = params.n_threads, params.n_threads_batch
        self._sharing_ways = 1
        params.kv_unified = False
        params.no_perf = True
        params.embeddings = False
        self._set_kv_type(params, model, config.kv_type)
        # Reproducible mode: flash attention on (its per-row kernel is what the mode rests on) and ggml's per-row
        # CPU kernels only, so a lone token meets the kernel it meets in a batch (reproducible/row_kernels.py).
        if config.reproducible:
            params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
        per_row = config.reproducible and row_kernels.available()
        with row_kernels.reference_kernels() if per_row else contextlib.nullcontext([]) as caught:
            self.ptr = llama_cpp.llama_init_from_model(model.ptr, params)
        self.reference_kernels = bool(caught)  # use_ref was set on the CPU backend this context made
        if not self.ptr:
            raise MemoryError(
                f"llama.cpp could not create a context for {config.n_slots} slots x {config.n_ctx_per_slot} "
                f"tokens ({config.kv_type} KV cache): not enough memory? Try fewer slots, a smaller context per "
                "slot or a quantized KV cache (see the log for llama.cpp's reason)."
            )
        self.memory = llama_cpp.llama_get_memory(self.ptr)
        # Read back what llama.cpp actually made: exceeding n_batch in one decode aborts the process.
        self.n_batch = llama_cpp.llama_n_batch(self.ptr)
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(self.ptr)
        self.batch = TokenBatch(self.n_batch)
        self.n_vocab = model.n_vocab
        self._state_buffer = (ctypes.c_uint8 * 0)()  # reused by copy_prefix, grown on demand
        self._state_src, self._state_written = -1, 0  # whose cells the buffer holds, and how many bytes

    @staticmethod
    def _set_kv_type(params, model: LlamaModel, kv_type: str) -> None:
        """K and V cache element types. A quantized V cache works only with flash attention (llama.cpp refuses
        it otherwise), so it is turned on; both need head sizes that are whole blocks of the type."""
        ggml_type, block, _ = KV_TYPES[kv_type]
        params.type_k = params.type_v = ggml_type
        if block > 1:
            params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
            dims = model.head_dims()
            if any(d % block for d in dims):
                raise ValueError(f"a {kv_type} KV cache needs head sizes that are multiples of {block}; this "
                                 f"model's are {dims[0]} (K) and {dims[1]} (V): use f16")

    def share_threads(self, ways: int) -> None:
        """Decode with 1/ways of the configured threads (at least one) from the next llama_decode on."""
        if ways != self._sharing_ways:
            self._sharing_ways = ways
            llama_cpp.llama_set_n_threads(self.ptr, max(1, self._n_threads // ways),
                                          max(1, self._n_threads_batch // ways))

    def decode(self) -> int:
        self.batch.struct.n_tokens = self.batch.n_tokens
        return llama_cpp.llama_decode(self.ptr, self.batch.struct)

    def clear_sequence(self, seq_id: int) -> None:
        llama_cpp.llama_memory_seq_rm(self.memory, seq_id, -1, -1)

    def trim(self, seq_id: int, keep: int) -> None:
        """Drop a sequence's KV from position `keep` on (metadata only)."""
        llama_cpp.llama_memory_seq_rm(self.memory, seq_id, keep, -1)

    def copy_prefix(self, src: int, dst: int, keep: int, again: bool = False) -> bool:
        """Make dst's KV the first `keep` positions of src's, now (synchronously).

        Serialises src's used cells with llama_state_seq_get_data and loads them into dst, then trims. Chosen
        over llama_memory_seq_cp, which across kv_unified=False streams copies the whole stream buffer (every
        cell, used or not) at the next decode: docs/engine.md ("Fan-out") has the measurements. `again`: src is
        the previous call's src and its KV has not changed since (no decode, no trim of it): its cells are
        loaded from that call's serialisation, not serialised again."""
        if again and self._state_src == src:
            written = self._state_written
        else:
            size = llama_cpp.llama_state_seq_get_size(self.ptr, src)
            if len(self._state_buffer) < size:
                self._state_buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_seq_get_data(self.ptr, self._state_buffer, size, src)
            self._state_src, self._state_written = src, written
        llama_cpp.llama_memory_seq_rm(self.memory, dst, -1, -1)
        if not written or not llama_cpp.llama_state_seq_set_data(self.ptr, self._state_buffer, written, dst):
            llama_cpp.llama_memory_seq_rm(self.memory, dst, -1, -1)
            return False
        self.trim(dst, keep)
        return True

    def output_logits(self, batch_index: int, copy: bool = True) -> np.ndarray:
        """The logits of an output of the last decode. A view (copy=False) is only valid until the next decode."""
        pointer = llama_cpp.llama_get_logits_ith(self.ptr, batch_index)
        view = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        return view.copy() if copy else view

    def next_position(self, seq_id: int) -> int:
        """Where a sequence's next token goes, per llama.cpp's own KV state (used to resync after errors)."""
        return llama_cpp.llama_memory_seq_pos_max(self.memory, seq_id) + 1

    def close(self) -> None:
        if self.ptr:
            llama_cpp.llama_free(self.ptr)
            self.ptr = None
