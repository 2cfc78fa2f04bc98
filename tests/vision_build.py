"""What the tiny vision GGUF builders share (tests/vision_gguf.py, vision_qwen2vl.py, vision_gemma3.py): their cache
folder, seeded random ViT weights named as libmtmd's clip loader names them (clip-impl.h), and the writing of a
GGUF, a projector's ("clip") header included.

Every file is written atomically (a temporary file of the writing process beside it, renamed when whole), so a
cached file is never a torn one, even when two test processes build it at once. The same arguments and seed give
the same bytes: the builders' cache files are keyed by their VERSION.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import gguf
import numpy as np

CACHE = Path(os.environ.get("CHORUS_CACHE", Path.home() / ".cache" / "chorus")) / "vision"

Weight = Callable[..., np.ndarray]


def gaussian(rng: np.random.Generator) -> Weight:
    """`w(*shape, scale=None)`: a float32 array of normal draws from `rng`, scaled by 1/sqrt(last dim) unless given."""

    def w(*shape: int, scale: float | None = None) -> np.ndarray:
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    return w


def norm(n: int) -> tuple[np.ndarray, np.ndarray]:
    """A layer norm that does nothing: (weight of ones, bias of zeros)."""
    return np.ones(n, np.float32), np.zeros(n, np.float32)


def vit_blocks(w: Weight, n_layer: int, n_embd: int, n_ff: int) -> dict[str, np.ndarray]:
    """The ViT's layers `v.blk.{i}`: q/k/v/out with biases, two norms, a GELU feed-forward (draws in that order)."""
    t = {}
    for i in range(n_layer):
        p = f"v.blk.{i}"
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t[f"{p}.{name}.weight"], t[f"{p}.{name}.bias"] = w(n_embd, n_embd), w(n_embd, scale=0.02)
        t[f"{p}.ln1.weight"], t[f"{p}.ln1.bias"] = norm(n_embd)
        t[f"{p}.ln2.weight"], t[f"{p}.ln2.bias"] = norm(n_embd)
        t[f"{p}.ffn_up.weight"], t[f"{p}.ffn_up.bias"] = w(n_ff, n_embd), w(n_ff, scale=0.02)
        t[f"{p}.ffn_down.weight"], t[f"{p}.ffn_down.bias"] = w(n_embd, n_ff), w(n_embd, scale=0.02)
    return t


@contextmanager
def gguf_file(target: Path, arch: str) -> Iterator[gguf.GGUFWriter]:
    """A GGUFWriter for `target`: add keys and tensors inside the block; on leaving it the file is written to a
    temporary file and renamed to `target` (an exception leaves no `target`)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")  # per process: two test workers may build the same file
    writer = gguf.GGUFWriter(tmp, arch=arch)
    yield writer
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(target)


def write_projector(target: Path, tensors: Mapping[str, np.ndarray], *, name: str, projector_type: str,
                    image_size: int, patch: int, n_embd: int, n_ff: int, n_layer: int, n_head: int,
                    projection_dim: int, eps: float, use_gelu: bool = True, scale_factor: int | None = None,
                    keep_f32: tuple[str, ...] = ()) -> Path:
    """A projector GGUF (arch "clip", f16 file type) at `target`: the vision header libmtmd reads, then `tensors`
    in their order, matrices as f16 (but those named in `keep_f32`), vectors as f32."""
    with gguf_file(target, "clip") as writer:
        writer.add_string("general.name", name)
        writer.add_uint32("general.file_type", 1)
        writer.add_bool("clip.has_vision_encoder", True)
        if use_gelu:
            writer.add_bool("clip.use_gelu", True)
        writer.add_string("clip.projector_type", projector_type)
        writer.add_uint32("clip.vision.image_size", image_size)
        writer.add_uint32("clip.vision.patch_size", patch)
        writer.add_uint32("clip.vision.embedding_length", n_embd)
        writer.add_uint32("clip.vision.feed_forward_length", n_ff)
        writer.add_uint32("clip.vision.block_count", n_layer)
        writer.add_uint32("clip.vision.projection_dim", projection_dim)
        writer.add_uint32("clip.vision.attention.head_count", n_head)
        writer.add_float32("clip.vision.attention.layer_norm_epsilon", eps)
        if scale_factor is not None:
            writer.add_uint32("clip.vision.projector.scale_factor", scale_factor)
        writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
        writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
        for key, array in tensors.items():
            half = array.ndim >= 2 and key not in keep_f32
            writer.add_tensor(key, array.astype(np.float16) if half else array)
    return target


def cached(path: Path, build: Callable[[Path], Path]) -> Path:
    """`path` if the file is there, else what `build(path)` writes."""
    return path if path.is_file() else build(path)
