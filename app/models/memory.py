"""How much memory a model needs at given engine settings: weights + KV cache + compute buffers.

The same arithmetic llama.cpp does when it loads (src/llama-kv-cache.cpp, llama-context.cpp), from the GGUF
header alone:
- weights: the bytes of every tensor (what llama_model_size reports);
- KV cache: per layer, `cells x streams x (K row + V row)`, a row being `head_dim x kv heads` elements of the
  cache type. The engine gives every slot its own stream (kv_unified=False) of `n_ctx_per_slot` rounded up to
  256 cells. Sliding-window layers are full size too: llama.cpp's default swa_full, which the engine keeps;
- compute buffers: the graph reserved for one ubatch with every token an output, dominated by the logits
  (`n_vocab x n_ubatch` floats), plus the per-slot output buffer (`n_vocab x slots` floats);
- a projector (mmproj: vision, audio or both), when one is paired: its file's bytes, which libmtmd loads whole.
docs/engine.md ("Memory") has the comparison with llama.cpp's own log on the test models.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from app.models.info import ModelFacts
from app.models.scan_cache import ScanCache
from app.models.shards import shard_paths

CTX_PAD = 256  # the engine rounds each slot's context up to this (llama.cpp pads the KV cache to 256 cells)
# KV cache types the engine offers: ggml type id, elements per block, bytes per block (ggml-common.h).
KV_TYPES = {"f16": (1, 1, 2), "q8_0": (8, 32, 34), "q4_0": (2, 32, 18)}
DEFAULT_UBATCH = 128  # EngineConfig.batch_capacity with its defaults (max_batch_tokens) for up to 124 slots
MIB = 1024 * 1024


def kv_cells(n_ctx_per_slot: int) -> int:
    """KV cells one slot gets: its context rounded up to CTX_PAD."""
    return (n_ctx_per_slot + CTX_PAD - 1) // CTX_PAD * CTX_PAD


def kv_row_bytes(kv_type: str, n_elements: int) -> int:
    if kv_type not in KV_TYPES:
        raise ValueError(f"unknown KV cache type {kv_type!r}: choose one of {', '.join(KV_TYPES)}")
    _, block, block_bytes = KV_TYPES[kv_type]
    return (n_elements + block - 1) // block * block_bytes


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes. `per_layer` is what one offloaded layer moves to a GPU (weights + its KV)."""

    weights: int
    kv: int
    compute: int
    per_layer: tuple[int, ...] = ()
    approximate: bool = False  # recurrent layers, whose state the estimate leaves out
    projector: int = 0  # the paired mmproj's weights (vision or audio encoder)

    @property
    def total(self) -> int:
        return self.weights + self.kv + self.compute + self.projector

    def describe(self) -> str:
        tilde = "≈" if self.approximate else ""
        projector = f" + projector {self.projector / MIB:,.0f}" if self.projector else ""
        return (f"{tilde}{self.total / MIB:,.0f} MiB (weights {self.weights / MIB:,.0f} + KV cache "
                f"{self.kv / MIB:,.0f} + compute {self.compute / MIB:,.0f}{projector})")


def estimate(facts: ModelFacts, n_slots: int, n_ctx_per_slot: int, kv_type: str = "f16",
             n_ubatch: int | None = None, flash_attn: bool = True) -> MemoryEstimate:
    """The estimate from a model's header facts (see `estimate_memory` for a path)."""
    cells = kv_cells(n_ctx_per_slot)
    ubatch = n_ubatch or max(DEFAULT_UBATCH, n_slots + 4)
    kv_layers = []
    for il in range(facts.n_layer):
        heads = facts.n_head_kv[il] if il < len(facts.n_head_kv) else 0
        row = kv_row_bytes(kv_type, facts.head_dim_k * heads) + kv_row_bytes(kv_type, facts.head_dim_v * heads)
        kv_layers.append(row * cells * n_slots)
    compute = 4 * facts.n_vocab * (ubatch + n_slots) + 4 * ubatch * (facts.n_embd + facts.n_ff)
    if not flash_attn:  # KQ scores in f32 for the widest head count, over one slot's cells
        compute += 4 * cells * ubatch * max(facts.n_head or [0])
    layer_weights = facts.layer_bytes or [0] * facts.n_layer
    per_layer = tuple(w + k for w, k in zip(layer_weights, kv_layers, strict=False))
    return MemoryEstimate(weights=facts.weights_bytes, kv=sum(kv_layers), compute=compute, per_layer=per_layer,
                          approximate=facts.recurrent)


def estimate_memory(path: str | Path, n_slots: int, n_ctx_per_slot: int, kv_type: str = "f16",
                    n_ubatch: int | None = None, cache=None, projector: str | Path | None = None) -> MemoryEstimate:
    """Weights + KV cache + compute buffers for `path` (its first shard, for a split model) at these settings,
    plus its `projector` (an mmproj file) if given. Reads only the header (through `cache`, a ScanCache, when
    given). Raises ValueError for a broken file (a projector that cannot be read counts 0: its loader says why)."""
    paths = shard_paths(Path(path))
    facts, broken = (cache or ScanCache()).facts(paths, Path(path).name)
    if facts is None:
        raise ValueError(f"{Path(path).name}: {broken}")
    found = estimate(facts, n_slots, n_ctx_per_slot, kv_type, n_ubatch)
    try:
        return replace(found, projector=Path(projector).stat().st_size) if projector else found
    except OSError:
        return found
