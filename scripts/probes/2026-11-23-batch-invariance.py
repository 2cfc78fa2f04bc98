"""Which op makes a sequence's numbers depend on what else is in its llama_decode? (evidence for docs/engine.md)

Backs docs/engine.md, "Reproducible outputs" ("What varied, measured").
A dated probe: it ran against the code of its date and may reach internals that have moved since.

Prefills one prompt into slot 0 of two identical contexts, then decodes the same next token for slot 0: in
context A alone, in context B beside one token for each of slots 1..k-1 (their prompts prefilled first). Every
intermediate tensor is read through llama.cpp's eval callback, and slot 0's slice of each is compared. The first
tensor that differs names the op. A second probe does the same for a prompt chunk: one 32-token chunk vs the same
tokens as 16 + 16 or 1 + 31 (the split a mixed step gets from llama.cpp's split_equal).

    python scripts/probes/2026-11-23-batch-invariance.py [--model PATH] [--k 2 4 8] [--flash-attn on|off]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

import llama_cpp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.engine.context import TokenBatch  # noqa: E402
from app.engine.native import LlamaModel, init_backend  # noqa: E402
from app.models import default_model_path  # noqa: E402


class GgmlTensor(ctypes.Structure):
    """ggml.h's struct ggml_tensor (GGML_MAX_DIMS 4, GGML_MAX_SRC 10, GGML_MAX_OP_PARAMS 64, GGML_MAX_NAME 64)."""

    _fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4),
                ("nb", ctypes.c_size_t * 4), ("op", ctypes.c_int), ("op_params", ctypes.c_int32 * 16),
                ("flags", ctypes.c_int32), ("src", ctypes.c_void_p * 10), ("view_src", ctypes.c_void_p),
                ("view_offs", ctypes.c_size_t), ("data", ctypes.c_void_p), ("name", ctypes.c_char * 64),
                ("extra", ctypes.c_void_p), ("padding", ctypes.c_char * 8)]


GGML_TYPE_F32 = 0
RECORD = True  # --no-callback: logits only, the graph computed as in the engine
OTHER_REPEAT = 1  # --long-others: the other slots' prompts this many times longer


class Recorder:
    """Every f32 tensor computed in the next decode, in graph order, as numpy arrays (shape ne3, ne2, ne1, ne0)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.tensors: list[tuple[str, np.ndarray]] = []
        self.callback = llama_cpp.ggml_backend_sched_eval_callback(self._on_tensor)

    def _on_tensor(self, pointer, ask, _user_data) -> bool:
        if ask:
            return True
        t = ctypes.cast(pointer, ctypes.POINTER(GgmlTensor)).contents
        if t.type == GGML_TYPE_F32 and t.data:
            shape = tuple(reversed([t.ne[i] for i in range(4)]))
            strides = tuple(reversed([t.nb[i] for i in range(4)]))
            size = max((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 4
            raw = (ctypes.c_uint8 * size).from_address(t.data)
            view = np.lib.stride_tricks.as_strided(np.frombuffer(raw, dtype=np.float32), shape, strides)
            self.tensors.append((t.name.decode(), view.copy()))
        return True


def make_context(model: LlamaModel, n_slots: int, flash_attn: bool, recorder: Recorder):
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = 1024 * n_slots
    params.n_seq_max = n_slots
    params.n_batch = params.n_ubatch = 128
    params.n_threads = params.n_threads_batch = 2
    params.kv_unified = False
    params.flash_attn_type = 1 if flash_attn else 0
    if recorder.enabled:  # the callback makes the scheduler compute node by node: run both ways
        params.cb_eval = recorder.callback
    ctx = llama_cpp.llama_init_from_model(model.ptr, params)
    assert ctx, "no context"
    return ctx


def decode(ctx, batch: TokenBatch, runs) -> None:
    """runs: (tokens, first position, slot, wants output) in batch order."""
    batch.clear()
    for tokens, pos, slot, output in runs:
        batch.add(tokens, pos, slot, output)
    batch.struct.n_tokens = batch.n_tokens
    assert llama_cpp.llama_decode(ctx, batch.struct) == 0


def target_slices(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Slot 0's part of a tensor recorded alone (a) and batched (b): index 0 on every axis where the two
    differ in size (tokens, streams); None when the shapes cannot be matched (e.g. a different KV length)."""
    if a.ndim != b.ndim:
        return None
    index_a, index_b = [], []
    for n_a, n_b in zip(a.shape, b.shape, strict=True):
        if n_a == n_b:
            index_a.append(slice(None)), index_b.append(slice(None))
        elif n_a == 1:
            index_a.append(slice(0, 1)), index_b.append(slice(0, 1))
        else:
            return None
    return a[tuple(index_a)], b[tuple(index_b)]


def first_difference(alone, together) -> tuple[str, float, int] | None:
    """Walk both recordings in graph order: the first tensor whose slot-0 part differs, its max |diff| and how
    many tensors were compared before it."""
    compared = 0
    for (name_a, a), (name_b, b) in zip(alone, together, strict=False):
        if name_a != name_b:
            return f"graphs diverge at {name_a} / {name_b}", float("nan"), compared
        pair = target_slices(a, b)
        if pair is None:
            continue
        compared += 1
        if not np.array_equal(pair[0], pair[1]):
            return name_a, float(np.nanmax(np.abs(pair[0] - pair[1]))), compared
    return None


def probe_decode(model: LlamaModel, prompt: list[int], k: int, flash_attn: bool) -> str:
    others = [model.tokenize(f"Tell me something about the number {n}. " * OTHER_REPEAT, True)[:400]
              for n in range(1, k)]
    rec_a, rec_b = Recorder(RECORD), Recorder(RECORD)
    ctx_a, ctx_b = make_context(model, k, flash_attn, rec_a), make_context(model, k, flash_attn, rec_b)
    batch = TokenBatch(128)
    for ctx in (ctx_a, ctx_b):
        for start in range(0, len(prompt), 100):
            decode(ctx, batch, [(prompt[start:start + 100], start, 0, True)])
    for slot, tokens in enumerate(others, start=1):
        for start in range(0, len(tokens), 100):  # n_batch is 128: more in one decode aborts
            decode(ctx_b, batch, [(tokens[start:start + 100], start, slot, True)])
    nxt = prompt[-1]
    rec_a.tensors.clear(), rec_b.tensors.clear()
    decode(ctx_a, batch, [([nxt], len(prompt), 0, True)])
    decode(ctx_b, batch, [([nxt], len(prompt), 0, True)] +
           [([t[-1]], len(t), slot, True) for slot, t in enumerate(others, start=1)])
    logits_a = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx_a, 0), shape=(model.n_vocab,)).copy()
    logits_b = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx_b, 0), shape=(model.n_vocab,)).copy()

    found = first_difference(rec_a.tensors, rec_b.tensors)
    result = (f"decode, slot 0 alone vs beside {k - 1} others (flash attention {'on' if flash_attn else 'off'}): "
              f"logits max |diff| {np.max(np.abs(logits_a - logits_b)):.3g}, argmax "
              f"{'same' if logits_a.argmax() == logits_b.argmax() else 'differs'}; first differing tensor: "
              f"{f'{found[0]} (max |diff| {found[1]:.3g}, after {found[2]} equal tensors)' if found else 'none'}")
    llama_cpp.llama_free(ctx_a), llama_cpp.llama_free(ctx_b)
    return result


def probe_chunks(model: LlamaModel, prompt: list[int], size: int, split: int, flash_attn: bool) -> str:
    """The last `size` prompt tokens as one chunk vs as split + (size - split); logits of the last token."""
    rec_a, rec_b = Recorder(RECORD), Recorder(RECORD)
    ctx_a, ctx_b = make_context(model, 1, flash_attn, rec_a), make_context(model, 1, flash_attn, rec_b)
    batch = TokenBatch(128)
    head, tail = prompt[:-size], prompt[-size:]
    for ctx in (ctx_a, ctx_b):
        for start in range(0, len(head), 100):
            decode(ctx, batch, [(head[start:start + 100], start, 0, False)])
    decode(ctx_a, batch, [(tail, len(head), 0, True)])
    decode(ctx_b, batch, [(tail[:split], len(head), 0, False)])
    decode(ctx_b, batch, [(tail[split:], len(head) + split, 0, True)])
    n = model.n_vocab
    a = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx_a, -1), shape=(n,)).copy()
    b = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx_b, -1), shape=(n,)).copy()
    llama_cpp.llama_free(ctx_a), llama_cpp.llama_free(ctx_b)
    return (f"prefill, last {size} prompt tokens as one chunk vs {split} + {size - split}: logits max |diff| "
            f"{np.max(np.abs(a - b)):.3g}, argmax {'same' if a.argmax() == b.argmax() else 'differs'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--k", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--flash-attn", choices=("on", "off", "both"), default="both")
    parser.add_argument("--length", type=int, default=100, help="slot 0's prompt length in tokens")
    parser.add_argument("--no-callback", action="store_true", help="compare logits only")
    parser.add_argument("--long-others", action="store_true", help="other slots hold ~400 tokens")
    args = parser.parse_args()
    global RECORD, OTHER_REPEAT
    RECORD, OTHER_REPEAT = not args.no_callback, 40 if args.long_others else 1
    init_backend()
    model = LlamaModel(args.model or default_model_path())
    prompt = model.tokenize("Write a short essay about rivers, mountains and the sea. " * 80, True)[:args.length]
    modes = {"on": [True], "off": [False], "both": [True, False]}[args.flash_attn]
    for flash_attn in modes:
        for k in args.k:
            print(probe_decode(model, prompt, k, flash_attn))
        for size, split in ((32, 16), (32, 1), (64, 32), (64, 1), (96, 48)):
            print(probe_chunks(model, prompt, size, split, flash_attn))


if __name__ == "__main__":
    main()
