"""A tiny vision model for tests: SmolLM2-135M as the text tower and a random-weight LLaVA-style projector.

No vision GGUF can be downloaded here, so `tiny_mmproj()` writes one with the `gguf` package: a 2-layer CLIP-like
ViT (64-wide, 8x8 patches of a 64x64 image: 64 image tokens) and the plain "mlp" projector (mm.0 -> GELU ->
mm.2) that libmtmd loads as LLaVA 1.5's. Its output width is SmolLM2's hidden size (576), so the embedded
default model is the text tower and the pair is `(default_model_path(), tiny_mmproj())`. The weights are random
(seeded): the replies mean nothing, and that does not matter, because the oracle of every vision test is
llama-server `--mmproj` on the same two files. The "mlp" projector has no image marker tokens and decodes
causally with plain positions (no M-RoPE).

The file is cached under the test cache dir (`CHORUS_CACHE`, else ~/.cache/chorus) by builder version, like the
llama-server build; `python tests/vision_gguf.py [DIR]` writes it (and three test images) by hand.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import gguf
import numpy as np

VERSION = 1  # bump when the layout or weights change: a new cache file
IMAGE_SIZE, PATCH = 64, 8
N_EMBD, N_HEAD, N_FF, N_LAYER, PROJ_HIDDEN = 64, 4, 128, 2, 256
TEXT_EMBD = 576  # SmolLM2-135M's hidden size: the projector's output width
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2
CACHE = Path(os.environ.get("CHORUS_CACHE", Path.home() / ".cache" / "chorus")) / "vision"


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Tensor name -> array in numpy's (row-major) order, as libmtmd's clip loader names them (clip-impl.h)."""

    def w(*shape: int, scale: float | None = None) -> np.ndarray:
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(n: int) -> tuple[np.ndarray, np.ndarray]:
        return np.ones(n, np.float32), np.zeros(n, np.float32)

    t = {"v.patch_embd.weight": w(N_EMBD, 3, PATCH, PATCH, scale=0.1),
         "v.patch_embd.bias": w(N_EMBD, scale=0.02),
         "v.position_embd.weight": w(IMAGE_TOKENS, N_EMBD, scale=0.02)}
    t["v.pre_ln.weight"], t["v.pre_ln.bias"] = norm(N_EMBD)
    for i in range(N_LAYER):
        p = f"v.blk.{i}"
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t[f"{p}.{name}.weight"], t[f"{p}.{name}.bias"] = w(N_EMBD, N_EMBD), w(N_EMBD, scale=0.02)
        t[f"{p}.ln1.weight"], t[f"{p}.ln1.bias"] = norm(N_EMBD)
        t[f"{p}.ln2.weight"], t[f"{p}.ln2.bias"] = norm(N_EMBD)
        t[f"{p}.ffn_up.weight"], t[f"{p}.ffn_up.bias"] = w(N_FF, N_EMBD), w(N_FF, scale=0.02)
        t[f"{p}.ffn_down.weight"], t[f"{p}.ffn_down.bias"] = w(N_EMBD, N_FF), w(N_EMBD, scale=0.02)
    t["mm.0.weight"], t["mm.0.bias"] = w(PROJ_HIDDEN, N_EMBD), w(PROJ_HIDDEN, scale=0.02)
    # SmolLM2's token embeddings have a std of about 0.1: keep the image's near that, so it steers the reply
    t["mm.2.weight"], t["mm.2.bias"] = w(TEXT_EMBD, PROJ_HIDDEN, scale=0.1), w(TEXT_EMBD, scale=0.01)
    return t


def write_mmproj(target: Path, seed: int = 37) -> Path:
    """Write the projector GGUF to `target` (atomically: a temporary file renamed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    writer = gguf.GGUFWriter(tmp, arch="clip")
    writer.add_string("general.name", "chorus tiny mmproj (random)")
    writer.add_uint32("general.file_type", 1)
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_bool("clip.use_gelu", True)
    writer.add_string("clip.projector_type", "mlp")
    writer.add_uint32("clip.vision.image_size", IMAGE_SIZE)
    writer.add_uint32("clip.vision.patch_size", PATCH)
    writer.add_uint32("clip.vision.embedding_length", N_EMBD)
    writer.add_uint32("clip.vision.feed_forward_length", N_FF)
    writer.add_uint32("clip.vision.block_count", N_LAYER)
    writer.add_uint32("clip.vision.projection_dim", TEXT_EMBD)
    writer.add_uint32("clip.vision.attention.head_count", N_HEAD)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    for name, array in _weights(np.random.default_rng(seed)).items():
        writer.add_tensor(name, array.astype(np.float16) if array.ndim >= 2 else array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(target)
    return target


def tiny_mmproj(cache: Path = CACHE) -> Path:
    """The cached projector, built on first use."""
    target = cache / f"tiny-mlp-mmproj-v{VERSION}.gguf"
    return target if target.is_file() else write_mmproj(target)


def sample_png(kind: int, size: int = 48, height: int | None = None) -> bytes:
    """A small PNG with a pattern per `kind` (0: gradient, 1: stripes, 2: checks, else noise), made with Qt-free
    stdlib zlib: the test images, decodable by stb like any PNG. `size` wide, `height` (default `size`) high."""
    import struct
    import zlib

    height = size if height is None else height
    y, x = np.mgrid[0:height, 0:size]
    if kind == 0:
        rgb = np.stack([x * 255 // size, y * 255 // height, np.full_like(x, 128)], -1)
    elif kind == 1:
        rgb = np.stack([((x // 6) % 2) * 255] * 3, -1)
    elif kind == 2:
        rgb = np.stack([(((x // 8) + (y // 8)) % 2) * 255, np.zeros_like(x), ((y // 8) % 2) * 200], -1)
    else:
        rgb = np.random.default_rng(kind).integers(0, 256, (height, size, 3))
    raw = b"".join(b"\x00" + row.astype(np.uint8).tobytes() for row in rgb)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    out = io.BytesIO()
    out.write(b"\x89PNG\r\n\x1a\n")
    out.write(chunk(b"IHDR", struct.pack(">IIBBBBB", size, height, 8, 2, 0, 0, 0)))
    out.write(chunk(b"IDAT", zlib.compress(raw)))
    out.write(chunk(b"IEND", b""))
    return out.getvalue()


def data_url(png: bytes) -> str:
    import base64

    return "data:image/png;base64," + base64.b64encode(png).decode()


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else CACHE
    print(write_mmproj(folder / f"tiny-mlp-mmproj-v{VERSION}.gguf"))
    for k in range(3):
        (folder / f"test-{k}.png").write_bytes(sample_png(k))
