"""Real LoRA adapter files for tests, written with the `gguf` package in convert_lora_to_gguf.py's layout:
general.type = adapter, adapter.type = lora, adapter.lora.alpha, and for each adapted weight `W` (GGUF shape
ne = [n_in, n_out]) the pair `W.lora_a` (ne [n_in, rank]) and `W.lora_b` (ne [rank, n_out]), F32, random.

    python -m tests.lora_adapter MODEL.gguf OUT.gguf [--seed N]   # writes one for a model, e.g. for llama-server
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gguf
import numpy as np

TARGETS = ("attn_q", "attn_v", "ffn_up", "ffn_down")  # the weights a typical PEFT config adapts


def write_lora(model: Path, target: Path, seed: int = 0, rank: int = 8, alpha: float = 16.0, std: float = 0.05,
               arch: str | None = None, embd_vocab: int | None = None) -> Path:
    """A random adapter for `model`'s blocks (`TARGETS` in every layer), strong enough to change its greedy
    text. `arch` overrides the architecture it claims; `embd_vocab` adds a token-embedding pair sized for that
    vocabulary (another vocabulary than the model's: an adapter made for another model)."""
    reader = gguf.GGUFReader(model, "r")
    model_arch = str(reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    writer = gguf.GGUFWriter(target, arch=arch or model_arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    rng = np.random.default_rng(seed)
    for tensor in reader.tensors:
        parts = tensor.name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in TARGETS:
            continue
        n_in, n_out = (int(x) for x in tensor.shape)
        # numpy shapes are GGUF's ne reversed
        writer.add_tensor(f"{tensor.name}.lora_a", rng.normal(0, std, (rank, n_in)).astype(np.float32))
        writer.add_tensor(f"{tensor.name}.lora_b", rng.normal(0, std, (n_out, rank)).astype(np.float32))
    if embd_vocab is not None:  # llm_build_inp_embd's layout: A is ne [rank, n_vocab], B is ne [rank, n_embd]
        n_embd = int(next(t for t in reader.tensors if t.name == "token_embd.weight").shape[0])
        writer.add_tensor("token_embd.weight.lora_a", rng.normal(0, std, (embd_vocab, rank)).astype(np.float32))
        writer.add_tensor("token_embd.weight.lora_b", rng.normal(0, std, (n_embd, rank)).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(write_lora(args.model, args.out, seed=args.seed))
