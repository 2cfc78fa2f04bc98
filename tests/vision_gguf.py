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
import math
import sys
from pathlib import Path

import numpy as np

from tests.vision_build import CACHE, cached, gaussian, norm, vit_blocks, write_projector

VERSION = 1  # bump when the layout or weights change: a new cache file
IMAGE_SIZE, PATCH = 64, 8
N_EMBD, N_HEAD, N_FF, N_LAYER, PROJ_HIDDEN = 64, 4, 128, 2, 256
TEXT_EMBD = 576  # SmolLM2-135M's hidden size: the projector's output width
IMAGE_TOKENS = (IMAGE_SIZE // PATCH) ** 2
VIT = dict(image_size=IMAGE_SIZE, patch=PATCH, n_embd=N_EMBD, n_ff=N_FF, n_layer=N_LAYER, n_head=N_HEAD)


def vit_weights(rng: np.random.Generator, n_patches: int = IMAGE_TOKENS) -> dict[str, np.ndarray]:
    """The ViT (`n_patches` patches) and the "mlp" projector: tensor name -> array in numpy's (row-major) order."""
    w = gaussian(rng)
    t = {"v.patch_embd.weight": w(N_EMBD, 3, PATCH, PATCH, scale=0.1),
         "v.patch_embd.bias": w(N_EMBD, scale=0.02),
         "v.position_embd.weight": w(n_patches, N_EMBD, scale=0.02)}
    t["v.pre_ln.weight"], t["v.pre_ln.bias"] = norm(N_EMBD)
    t.update(vit_blocks(w, N_LAYER, N_EMBD, N_FF))
    t["mm.0.weight"], t["mm.0.bias"] = w(PROJ_HIDDEN, N_EMBD), w(PROJ_HIDDEN, scale=0.02)
    # SmolLM2's token embeddings have a std of about 0.1: keep the image's near that, so it steers the reply
    t["mm.2.weight"], t["mm.2.bias"] = w(TEXT_EMBD, PROJ_HIDDEN, scale=0.1), w(TEXT_EMBD, scale=0.01)
    return t


def write_mmproj(target: Path, seed: int = 37, image_tokens: int = IMAGE_TOKENS) -> Path:
    """Write the projector GGUF to `target` (atomically: a temporary file renamed). `image_tokens` (a square):
    its ViT sees an image resized to that many 8x8 patches (64: 64x64 pixels, the tests'; 256: 128x128, a real
    Gemma 3 image's token count, for scripts/measure_vision.py --image-tokens 256)."""
    side = math.isqrt(image_tokens) * PATCH
    return write_projector(target, vit_weights(np.random.default_rng(seed), image_tokens),
                           name="chorus tiny mmproj (random)", projector_type="mlp", projection_dim=TEXT_EMBD,
                           eps=1e-5, **{**VIT, "image_size": side})


def tiny_mmproj(cache: Path = CACHE, image_tokens: int = IMAGE_TOKENS) -> Path:
    """The cached projector (`image_tokens` an image), built on first use."""
    size = "" if image_tokens == IMAGE_TOKENS else f"-{image_tokens}tok"
    return cached(cache / f"tiny-mlp-mmproj{size}-v{VERSION}.gguf",
                  lambda target: write_mmproj(target, image_tokens=image_tokens))


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


def about(png: bytes, question: str, max_tokens: int = 12, image_first: bool = True):
    """A greedy chat request asking `question` about one image (its part before the question, or after)."""
    from app.engine import GenerationRequest, SamplingParams

    parts = [{"type": "image_url", "image_url": {"url": data_url(png)}}, {"type": "text", "text": question}]
    return GenerationRequest(messages=[{"role": "user", "content": parts if image_first else parts[::-1]}],
                             max_tokens=max_tokens, sampling=SamplingParams(temperature=0.0))


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else CACHE
    print(write_mmproj(folder / f"tiny-mlp-mmproj-v{VERSION}.gguf"))
    for k in range(3):
        (folder / f"test-{k}.png").write_bytes(sample_png(k))
