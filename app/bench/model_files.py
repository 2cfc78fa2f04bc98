"""Model files the benchmarks (and the tests) write with the one GGUF writer (gguf_write.py): a copy of a GGUF with
another chat template, and a random LoRA adapter in convert_lora_to_gguf.py's layout; and the chat templates
llama.cpp ships.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE = Path(os.environ.get("CHORUS_CACHE", Path.home() / ".cache" / "chorus"))  # where `make llama-source` keeps
LORA_TARGETS = ("attn_q", "attn_v", "ffn_up", "ffn_down")  # the weights a typical PEFT config adapts


def write_variant(source: Path, target: Path, chat_template: str | None, uint32: dict | None = None) -> Path:
    """Copy `source` to `target` with the chat template replaced (a string) or removed (None), and any
    integer keys in `uint32` set (e.g. the EOS token id). Byte for byte what the `gguf` package's metadata copier
    writes (gguf_write.py), in a fraction of its time."""
    from app.bench import gguf_write

    key = "tokenizer.chat_template"
    changes: dict = {k: gguf_write.uint32(value) for k, value in (uint32 or {}).items()}
    if chat_template is None:
        return gguf_write.copy_with_metadata(source, target, {key: None, **changes})
    return gguf_write.copy_with_metadata(source, target, changes, append={key: gguf_write.string(chat_template)},
                                        drop_prefix=key)


def write_lora(model: Path, target: Path, seed: int = 0, rank: int = 8, alpha: float = 16.0, std: float = 0.05,
               arch: str | None = None, embd_vocab: int | None = None) -> Path:
    """A random adapter for `model`'s blocks (`LORA_TARGETS` in every layer), strong enough to change its greedy
    text: general.type = adapter, adapter.type = lora, adapter.lora.alpha, and for each adapted weight `W` (GGUF
    shape ne = [n_in, n_out]) the pair `W.lora_a` (ne [n_in, rank]) and `W.lora_b` (ne [rank, n_out]), F32.
    `arch` overrides the architecture it claims; `embd_vocab` adds a token-embedding pair sized for that
    vocabulary (another vocabulary than the model's: an adapter made for another model)."""
    import numpy as np

    from app.bench import gguf_write
    from app.models.gguf_header import read_header

    header = read_header(model)
    dims = {tensor.name: tensor.dims for tensor in header.tensors}
    metadata = {gguf_write.ARCHITECTURE: gguf_write.string(arch or str(header.get(gguf_write.ARCHITECTURE))),
                "general.type": gguf_write.string("adapter"), "adapter.type": gguf_write.string("lora"),
                "adapter.lora.alpha": gguf_write.float32(alpha)}
    tensors = {}
    rng = np.random.default_rng(seed)
    for name, shape in dims.items():
        parts = name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in LORA_TARGETS:
            continue
        n_in, n_out = (int(x) for x in shape)
        # numpy shapes are GGUF's ne reversed
        tensors[f"{name}.lora_a"] = rng.normal(0, std, (rank, n_in)).astype(np.float32)
        tensors[f"{name}.lora_b"] = rng.normal(0, std, (n_out, rank)).astype(np.float32)
    if embd_vocab is not None:  # llm_build_inp_embd's layout: A is ne [rank, n_vocab], B is ne [rank, n_embd]
        n_embd = int(dims["token_embd.weight"][0])
        tensors["token_embd.weight.lora_a"] = rng.normal(0, std, (embd_vocab, rank)).astype(np.float32)
        tensors["token_embd.weight.lora_b"] = rng.normal(0, std, (n_embd, rank)).astype(np.float32)
    return gguf_write.write_file(target, metadata, tensors)


def llama_cpp_templates(cache: Path = CACHE) -> dict[str, str]:
    """name -> source of the chat templates llama.cpp ships (models/templates in the vendored source): from a
    llama.cpp tree named by CHORUS_LLAMA_CPP_SOURCE, else the templates `make llama-source` unpacks into `cache`
    (scripts/llama_cpp_source.sh), else the sdist kept there; {} when none is there."""
    import tarfile
    from pathlib import PurePosixPath

    import llama_cpp

    tree = os.environ.get("CHORUS_LLAMA_CPP_SOURCE")
    unpacked = cache / f"llama.cpp-{llama_cpp.__version__}"
    if not tree and (unpacked / ".unpacked").is_file():
        tree = str(unpacked)
    if tree:
        return {p.stem: p.read_text() for p in sorted(Path(tree, "models", "templates").glob("*.jinja"))}
    sdist = cache / "src" / f"llama_cpp_python-{llama_cpp.__version__}.tar.gz"
    if not sdist.is_file():
        return {}
    with tarfile.open(sdist) as tar:
        return {PurePosixPath(m.name).stem: tar.extractfile(m).read().decode() for m in tar.getmembers()
                if m.isfile() and "/models/templates/" in m.name and m.name.endswith(".jinja")}
