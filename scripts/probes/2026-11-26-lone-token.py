"""When does a lone decode token (one token of one stream in its ubatch) give the bits it gets beside others?

Backs docs/engine.md, "Reproducible outputs" (the lone decode token; app/engine/reproducible/row_kernels.py).
A dated probe: it ran against the code of its date and may reach internals that have moved since.

Two (or three) contexts of 2 slots each hold the same prompt in slot 0, prefilled in 48-token pieces as the
reproducible engine does. At each KV length L the next token is decoded for slot 0: alone in context A, with a
placeholder token in slot 1 in context B (the engine's rule), and alone in context C whose CPU backend runs with
ggml's `use_ref` (per-row kernels only; `--use-ref`). Logits are compared bit for bit, then the token is trimmed
and the prompt extended. Also times each way of decoding one token at a given length.

    python scripts/probes/2026-11-26-lone-token.py [--flash-attn auto|on|off] [--lengths 250 256 257 300 600]
        [--use-ref]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import llama_cpp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.engine.context import TokenBatch  # noqa: E402
from app.engine.native import LlamaModel, init_backend  # noqa: E402
from app.models import default_model_path  # noqa: E402

FA = {"auto": -1, "on": 1, "off": 0}


def make_context(model: LlamaModel, flash_attn: str, use_ref: bool = False, slots: int = 2, cells: int = 2048):
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = cells * slots
    params.n_seq_max = slots
    params.n_batch = params.n_ubatch = 128
    params.n_threads = params.n_threads_batch = 2
    params.kv_unified = False
    params.no_perf = True
    params.flash_attn_type = FA[flash_attn]
    if use_ref:
        from app.engine.reproducible.row_kernels import reference_kernels
        with reference_kernels() as caught:
            ctx = llama_cpp.llama_init_from_model(model.ptr, params)
        assert caught, "no CPU backend was made"
    else:
        ctx = llama_cpp.llama_init_from_model(model.ptr, params)
    assert ctx
    return ctx


def decode(ctx, batch: TokenBatch, runs) -> float:
    batch.clear()
    for tokens, pos, slot, output in runs:
        batch.add(tokens, pos, slot, output)
    batch.struct.n_tokens = batch.n_tokens
    t = time.perf_counter()
    assert llama_cpp.llama_decode(ctx, batch.struct) == 0
    return time.perf_counter() - t


def logits(ctx, model, i=0) -> np.ndarray:
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), shape=(model.n_vocab,)).copy()


def trim(ctx, slot: int, keep: int) -> None:
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), slot, keep, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flash-attn", choices=tuple(FA), default="auto")
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 250, 255, 256, 257, 300, 511, 512, 600])
    parser.add_argument("--use-ref", action="store_true")
    parser.add_argument("--time", type=int, default=0, help="time N decodes of each kind at the last length")
    args = parser.parse_args()
    init_backend()
    model = LlamaModel(default_model_path())
    prompt = model.tokenize("Write a short essay about rivers, mountains and the sea. " * 120, True)
    ctxs = {"alone": make_context(model, args.flash_attn), "placeholder": make_context(model, args.flash_attn)}
    if args.use_ref:
        ctxs["use_ref"] = make_context(model, args.flash_attn, use_ref=True)
    batch = TokenBatch(128)
    other = model.tokenize("Tell me about the number seven.", True)
    decode(ctxs["placeholder"], batch, [(other, 0, 1, False)])
    done = 0
    for length in sorted(args.lengths):
        while done < length:
            piece = prompt[done:min(length, done + 48)]
            for ctx in ctxs.values():
                decode(ctx, batch, [(piece, done, 0, False)])
            done += len(piece)
        token = prompt[length]
        decode(ctxs["alone"], batch, [([token], length, 0, True)])
        decode(ctxs["placeholder"], batch, [([token], length, 0, True), ([token], len(other), 1, False)])
        trim(ctxs["placeholder"], 1, len(other))
        ref = logits(ctxs["placeholder"], model)
        line = [f"KV {length} + 1 (cells {length + 1}):"]
        for name, ctx in ctxs.items():
            if name == "placeholder":
                continue
            if name == "use_ref":
                decode(ctx, batch, [([token], length, 0, True)])
            got = logits(ctx, model)
            same = np.array_equal(got, ref)
            line.append(f"{name} vs placeholder {'IDENTICAL' if same else f'differ {np.max(np.abs(got - ref)):.3g}'}")
        print("  ".join(line), flush=True)
        for ctx in ctxs.values():
            trim(ctx, 0, length)
    if args.time:
        length, token = done, prompt[done]
        for name, ctx in ctxs.items():
            times = []
            for _ in range(args.time):
                runs = [([token], length, 0, True)]
                if name == "placeholder":
                    runs.append(([token], len(other), 1, False))
                times.append(decode(ctx, batch, runs))
                trim(ctx, 0, length), trim(ctx, 1, len(other))
            print(f"time at KV {length}: {name}: median {1000 * np.median(times):.2f} ms, "
                  f"min {1000 * min(times):.2f} ms", flush=True)
    for ctx in ctxs.values():
        llama_cpp.llama_free(ctx)


if __name__ == "__main__":
    main()
