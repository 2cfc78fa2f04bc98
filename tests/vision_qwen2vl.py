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

import os
import sys
from pathlib import Path

import gguf
import numpy as np

VERSION = 1  # bump when the layout or weights change: new cache files
ARCH = "qwen2vl"
SECTIONS = [8, 12, 12, 0]  # rotary pairs per M-RoPE section (t, y, x, unused): 32 = SmolLM2's head_dim / 2
PATCH, N_EMBD, N_HEAD, N_FF, N_LAYER, PROJ_HIDDEN = 4, 64, 4, 128, 2, 256
TEXT_EMBD = 576
CACHE = Path(os.environ.get("CHORUS_CACHE", Path.home() / ".cache" / "chorus")) / "vision"


def _to_neox(raw: np.ndarray, n_head: int) -> np.ndarray:
    """Undo convert_hf_to_gguf.py's LlamaModel.permute on the rows of a (quantized, row-major) q or k weight:
    rows (head, pair, 2) -> (head, 2, pair). Rows are whole quantization blocks, so the bytes move as they are."""
    rows = raw.shape[0]
    return raw.reshape(n_head, rows // n_head // 2, 2, *raw.shape[1:]).swapaxes(1, 2).reshape(raw.shape)


def write_text_model(source: Path, target: Path) -> Path:
    """`source` (a llama-architecture GGUF, SmolLM2) as a qwen2vl GGUF at `target` (atomically)."""
    reader = gguf.GGUFReader(source, "r")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    writer = gguf.GGUFWriter(tmp, arch=ARCH)
    heads = {}
    for field in reader.fields.values():
        if field.name in (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.NAME) or field.name.startswith("GGUF."):
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
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(target)
    return target


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Tensor name -> array (numpy order) as libmtmd's clip loader names them for qwen2vl_merger."""

    def w(*shape: int, scale: float | None = None) -> np.ndarray:
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {"v.patch_embd.weight": w(N_EMBD, 3, PATCH, PATCH, scale=0.1),
         "v.patch_embd.weight.1": w(N_EMBD, 3, PATCH, PATCH, scale=0.1)}
    for i in range(N_LAYER):
        p = f"v.blk.{i}"
        for name in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t[f"{p}.{name}.weight"], t[f"{p}.{name}.bias"] = w(N_EMBD, N_EMBD), w(N_EMBD, scale=0.02)
        for norm in ("ln1", "ln2"):
            t[f"{p}.{norm}.weight"], t[f"{p}.{norm}.bias"] = np.ones(N_EMBD, np.float32), np.zeros(N_EMBD, np.float32)
        t[f"{p}.ffn_up.weight"], t[f"{p}.ffn_up.bias"] = w(N_FF, N_EMBD), w(N_FF, scale=0.02)
        t[f"{p}.ffn_down.weight"], t[f"{p}.ffn_down.bias"] = w(N_EMBD, N_FF), w(N_EMBD, scale=0.02)
    t["mm.0.weight"], t["mm.0.bias"] = w(PROJ_HIDDEN, 4 * N_EMBD), w(PROJ_HIDDEN, scale=0.02)
    # near SmolLM2's token-embedding scale (std ~0.1), so the image steers the reply
    t["mm.2.weight"], t["mm.2.bias"] = w(TEXT_EMBD, PROJ_HIDDEN, scale=0.1), w(TEXT_EMBD, scale=0.01)
    return t


def write_mmproj(target: Path, seed: int = 2) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    writer = gguf.GGUFWriter(tmp, arch="clip")
    writer.add_string("general.name", "chorus tiny qwen2vl mmproj (random)")
    writer.add_uint32("general.file_type", 1)
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_string("clip.projector_type", "qwen2vl_merger")
    writer.add_uint32("clip.vision.image_size", 64)
    writer.add_uint32("clip.vision.patch_size", PATCH)
    writer.add_uint32("clip.vision.embedding_length", N_EMBD)
    writer.add_uint32("clip.vision.feed_forward_length", N_FF)
    writer.add_uint32("clip.vision.block_count", N_LAYER)
    writer.add_uint32("clip.vision.projection_dim", TEXT_EMBD)
    writer.add_uint32("clip.vision.attention.head_count", N_HEAD)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
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
