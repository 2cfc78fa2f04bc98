"""When a lone token computes the same bits as in a batch: ggml's per-row CPU kernels and row-invariant matrices.

Reproducible mode (reproducible.py) needs every token to meet the same kernels however it is batched. Two things
can break that for a token that is alone in its ubatch (one token of one stream), both read from the vendored
ggml source and measured (docs/engine.md, "Reproducible outputs"; scripts/probes/2026-11-26-lone-token.py):

- FLASH_ATTN_EXT takes a split-KV path for one query token of one stream once the stream's KV view reaches 512
  cells (ggml-cpu/ops.cpp; llama.cpp pads the view to a multiple of 256, so from the 257th cell of the slot on).
  With ggml's `use_ref` set on the CPU backend it never does (nor the tiled path, nor the tiled K-quant matmul);
  `reference_kernels()` sets it on the backend a llama_context creates.
- A weight matrix whose type has a batched kernel (llamafile's tinyBLAS for >= 2 rows: F32, F16, BF16, Q8_0,
  Q4_0, Q5_0, IQ4_NL; repacked Q4_0/Q4_K/IQ4_NL; tiled K-quants from 8 rows) may sum one row in another order
  than `vec_dot` does. `ROW_INVARIANT_TYPES` have only `vec_dot`; `matrices_row_invariant` checks a model's
  layer matrices (its output matrix computes output rows only, which a placeholder never adds).

Where both hold, a lone token needs no placeholder neighbour. Invariant: outside `reference_kernels()` the CPU
device's function table is exactly what ggml put there.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading
from pathlib import Path

from app.models.gguf_header import GGUFError, read_header

# ggml types whose mul_mat is vec_dot row by row for any number of rows on x86 (no tinyBLAS, repack or tiled
# kernel for them in this build): Q4_1 (measured, SmolLM2), Q5_1 (same code path, not measured: left out).
ROW_INVARIANT_TYPES = {3: "Q4_1"}
_ELEMENTWISE = (".bias", "norm.weight")  # F32 vectors added or multiplied element by element, not matmuls

_INIT_BACKEND = 5  # index of init_backend in struct ggml_backend_device_i (ggml-backend-impl.h)
_INIT_T = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_lock = threading.Lock()


@functools.cache
def _symbols():
    # By soname, so the copies llama_cpp's libllama already loaded are found (the wheel ships each library as
    # separate files, not links: opening another file name would load a second copy with its own CPU device).
    cpu = ctypes.CDLL("libggml-cpu.so.0")
    base = ctypes.CDLL("libggml-base.so.0")
    cpu.ggml_backend_cpu_reg.restype = ctypes.c_void_p
    base.ggml_backend_reg_dev_get.restype = ctypes.c_void_p
    base.ggml_backend_reg_dev_get.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    cpu.ggml_backend_cpu_set_use_ref.argtypes = [ctypes.c_void_p, ctypes.c_bool]
    cpu.ggml_backend_cpu_set_use_ref.restype = None
    device = base.ggml_backend_reg_dev_get(cpu.ggml_backend_cpu_reg(), 0)
    return device, cpu.ggml_backend_cpu_set_use_ref


def available() -> bool:
    """Whether this build exports what `reference_kernels` needs (a CPU backend with `use_ref`)."""
    try:
        device, _ = _symbols()
    except (OSError, AttributeError):
        return False
    return bool(device)


@contextlib.contextmanager
def reference_kernels():
    """CPU backends created in this block (by llama_init_from_model) run ggml's per-row kernels (`use_ref`);
    yields the list of those backends (empty: none was made, and nothing was set).

    llama.cpp makes its CPU backend inside llama_init_from_model and does not hand it out, so it is caught as it
    is made: the CPU device's `init_backend` entry (a writable static struct in libggml-cpu) points at a wrapper
    that calls the original and sets `use_ref` on what it returns, until the block ends."""
    device, set_use_ref = _symbols()
    slot = ctypes.c_void_p.from_address(device + _INIT_BACKEND * ctypes.sizeof(ctypes.c_void_p))
    with _lock:
        original_address = slot.value
        original = _INIT_T(original_address)
        caught: list[int] = []

        def init_backend(dev, params):
            backend = original(dev, params)
            if backend:
                set_use_ref(backend, True)
                caught.append(backend)
            return backend

        wrapper = _INIT_T(init_backend)
        slot.value = ctypes.cast(wrapper, ctypes.c_void_p).value
        try:
            yield caught
        finally:
            slot.value = original_address


@functools.cache
def matrices_row_invariant(path: str | Path) -> bool:
    """Whether every layer matrix of the GGUF model at `path` has a row-invariant type (a single-file model;
    a split model, or one that cannot be read, is taken as not)."""
    try:
        header = read_header(path)
    except (OSError, GGUFError):
        return False
    if int(header.get("split.count", 1) or 1) > 1:
        return False
    layers = [t for t in header.tensors if t.name.startswith("blk.")]
    return bool(layers) and all(t.ggml_type in ROW_INVARIANT_TYPES or
                                (t.ggml_type == 0 and t.name.endswith(_ELEMENTWISE)) for t in layers)
