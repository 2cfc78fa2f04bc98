"""The floor: the same batches decoded by a bare loop — no scheduler, no events, no text, no handles.

Uses the engine's own context, batch and sampler chains, so the only difference from the engine is the
engine's bookkeeping; that difference is what `engine_vs_raw` measures.
"""

from __future__ import annotations

import time

import numpy as np

from app.bench.workloads import GREEDY
from app.engine import EngineConfig
from app.engine.context import LlamaContext
from app.engine.native import LlamaModel
from app.engine.sampling.chain import SamplerChain


def raw_loop_decode_tps(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int) -> float:
    """Prefill every prompt, then time max_tokens-1 decode steps of one token per sequence."""
    n = len(prompts)
    model = LlamaModel(model_path)
    ctx = LlamaContext(model, EngineConfig(model_path=model_path, n_slots=n, n_ctx_per_slot=n_ctx,
                                           n_threads=threads, reproducible=False))
    samplers = [SamplerChain(GREEDY, model.n_vocab, model.eog_ids) for _ in range(n)]
    try:
        tokens = np.zeros(n, np.int32)
        positions = np.zeros(n, np.int32)
        batch = ctx.batch
        for seq, prompt in enumerate(prompts):  # prefill in n_batch chunks
            ids = model.tokenize(prompt, add_special=True)
            for start in range(0, len(ids), ctx.n_batch):
                chunk = ids[start:start + ctx.n_batch]
                batch.clear()
                last = batch.add(chunk, start, seq, start + len(chunk) == len(ids))
                if ctx.decode() != 0:
                    raise RuntimeError("raw loop prefill failed")
            tokens[seq] = samplers[seq].sample(ctx.ptr, last)
            positions[seq] = len(ids)
        seq_ids = np.arange(n, dtype=np.int32)
        started = time.perf_counter()
        for _ in range(max_tokens - 1):
            batch.token[:n] = tokens
            batch.pos[:n] = positions
            batch.seq[:n] = seq_ids
            batch.logits[:n] = 1
            batch.n_tokens = n
            if ctx.decode() != 0:
                raise RuntimeError("raw loop decode failed")
            for seq in range(n):
                tokens[seq] = samplers[seq].sample(ctx.ptr, seq)
            positions += 1
        elapsed = time.perf_counter() - started
        return n * (max_tokens - 1) / elapsed
    finally:
        for sampler in samplers:
            sampler.free()
        ctx.close()
        model.close()
