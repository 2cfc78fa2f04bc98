"""A tiny Qwen2-VL-style pair for tests: SmolLM2-135M rewritten as a `qwen2vl` text model (M-RoPE) and a
random-weight `qwen2vl_merger` projector, so the engine's M-RoPE path has an oracle (llama-server `--mmproj`).

The text model is SmolLM2's own weights and tokenizer under the architecture `qwen2vl`: the same tensors (Q4_1 as
shipped), `qwen2vl.rope.dimension_sections` = [8, 12, 12, 0] (its 64-wide heads: 32 rotary pairs, as Qwen2-VL
splits them into temporal, height and width sections), and the rows of every attn_q / attn_k permuted back from
llama.cpp's "normal" rotary layout (adjacent pairs, what convert_hf_to_gguf.py makes of a Llama) to the NeoX
layout (halves) that M-RoPE uses. On text alone every section has the same position, so it is SmolLM2 again up
to rounding (another rotary kernel: greedy text stays close to SmolLM2's, not bit-identical).
No attention biases (llama.cpp's qwen2vl takes them as optional).

The projector (`tiny_mrope_mmproj()`) is a 2-layer ViT, 64 wide, 4x4 patches, two patch-embedding kernels
(v.patch_embd.weight and .weight.1, Qwen2-VL's temporal pair), q/k/v biases, and the merger mm.0 -> GELU ->
mm.2 that libmtmd loads as "qwen2vl_merger": 2x2 patches become one image token, so an image resized to W x H
pixels (multiples of 8) is a (W/8) x (H/8) grid of tokens, decoded at M-RoPE positions (t, y, x) and advancing
the sequence by max(W/8, H/8) positions, not by its token count. libmtmd marks the image with
"<|vision_start|>" / "<|vision_end|>", which SmolLM2's vocabulary tokenises as plain text (both sides alike).
Random weights (seeded): replies mean nothing; the oracle is llama-server on the same two files.

Both files are cached under the test cache dir (`CHORUS_CACHE`, else ~/.cache/chorus) by builder version, like
tests/vision_gguf.py; `python -m tests.vision_qwen2vl [DIR]` writes them (and two test images) by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gguf
import numpy as np

from tests.vision_build import CACHE, gaussian, gguf_file, vit_blocks, write_projector

VERSION = 1  # bump when the layout or weights change: new cache files
ARCH = "qwen2vl"
SECTIONS = [8, 12, 12, 0]  # rotary pairs per M-RoPE section (t, y, x, unused): 32 = SmolLM2's head_dim / 2
PATCH, N_EMBD, N_HEAD, N_FF, N_LAYER, PROJ_HIDDEN = 4, 64, 4, 128, 2, 256
TEXT_EMBD = 576


def _to_neox(raw: np.ndarray, n_head: int) -> np.ndarray:
    """Undo convert_hf_to_gguf.py's LlamaModel.permute on the rows of a (quantized, row-major) q or k weight:
    rows (head, pair, 2) -> (head, 2, pair). Rows are whole quantization blocks, so the bytes move as they are."""
    rows = raw.shape[0]
    return raw.reshape(n_head, rows // n_head // 2, 2, *raw.shape[1:]).swapaxes(1, 2).reshape(raw.shape)


def write_text_model(source: Path, target: Path) -> Path:
    """`source` (a llama-architecture GGUF, SmolLM2) as a qwen2vl GGUF at `target` (atomically)."""
    reader = gguf.GGUFReader(source, "r")
    heads = {}
    with gguf_file(target, ARCH) as writer:
        for field in reader.fields.values():
            if (field.name in (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.NAME)
                    or field.name.startswith("GGUF.")):
                continue
            name = ARCH + field.name[len("llama"):] if field.name.startswith("llama.") else field.name
            val_type = field.types[0]
            sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(name, field.contents(), val_type, sub_type=sub_type)
            if field.name in ("llama.attention.head_count", "llama.attention.head_count_kv"):
                heads[field.name.rsplit(".", 1)[1]] = int(field.contents())
        writer.add_string(gguf.Keys.General.NAME, "chorus tiny qwen2vl (SmolLM2-135M weights, M-RoPE)")
        writer.add_rope_dimension_sections(SECTIONS)
        for tensor in reader.tensors:
            data = tensor.data
            if tensor.name.endswith("attn_q.weight"):
                data = _to_neox(data, heads["head_count"])
            elif tensor.name.endswith("attn_k.weight"):
                data = _to_neox(data, heads["head_count_kv"])
            writer.add_tensor(tensor.name, np.ascontiguousarray(data), raw_shape=data.shape,
                              raw_dtype=tensor.tensor_type)
    return target


def vit_weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Tensor name -> array (numpy order) as libmtmd's clip loader names them for qwen2vl_merger."""
    w = gaussian(rng)
    t = {"v.patch_embd.weight": w(N_EMBD, 3, PATCH, PATCH, scale=0.1),
         "v.patch_embd.weight.1": w(N_EMBD, 3, PATCH, PATCH, scale=0.1)}
    t.update(vit_blocks(w, N_LAYER, N_EMBD, N_FF))
    t["mm.0.weight"], t["mm.0.bias"] = w(PROJ_HIDDEN, 4 * N_EMBD), w(PROJ_HIDDEN, scale=0.02)
    # near SmolLM2's token-embedding scale (std ~0.1), so the image steers the reply
    t["mm.2.weight"], t["mm.2.bias"] = w(TEXT_EMBD, PROJ_HIDDEN, scale=0.1), w(TEXT_EMBD, scale=0.01)
    return t


def write_mmproj(target: Path, seed: int = 2) -> Path:
    return write_projector(target, vit_weights(np.random.default_rng(seed)),
                           name="chorus tiny qwen2vl mmproj (random)", projector_type="qwen2vl_merger",
                           use_gelu=False, image_size=64, patch=PATCH, n_embd=N_EMBD, n_ff=N_FF, n_layer=N_LAYER,
                           n_head=N_HEAD, projection_dim=TEXT_EMBD, eps=1e-6)


def tiny_qwen2vl(cache: Path = CACHE) -> tuple[Path, Path]:
    """(text model, projector), cached, built on first use from the embedded SmolLM2."""
    from app.models import default_model_path

    model = cache / f"tiny-qwen2vl-v{VERSION}.gguf"
    mmproj = cache / f"tiny-qwen2vl-mmproj-v{VERSION}.gguf"
    if not model.is_file():
        write_text_model(default_model_path(), model)
    if not mmproj.is_file():
        write_mmproj(mmproj)
    return model, mmproj


if __name__ == "__main__":
    from tests.vision_gguf import sample_png

    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else CACHE
    for path in tiny_qwen2vl(folder):
        print(path)
    (folder / "wide.png").write_bytes(sample_png(0, 64, 32))
    (folder / "tall.png").write_bytes(sample_png(2, 24, 56))
