"""What a quantized KV cache costs and changes: throughput at N streams, and greedy agreement with f16.

Throughput: each KV type's steady decode t/s at N concurrent streams, measured back to back in one round (f16
first), so the ratios q8_0/f16 and q4_0/f16 compare runs that met the same host load. Agreement: the same
greedy requests with each type; for every request, the share of its tokens generated before the first one that
differs from f16's, averaged. Two prompt sets: eight chat questions (the figure reported), and the throughput
prompts (raw repetitive text the model continues by rote: they agree far more, so they are reported apart).
Deterministic, so one run.
"""

from __future__ import annotations

from app.bench.scenarios import _engine, engine_decode_tps
from app.bench.workloads import GREEDY, fixed_length_request
from app.engine import GenerationRequest

KV_COMPARED = ("q8_0", "q4_0")
CHAT_QUESTIONS = ("Write a haiku about the sea.", "Name the three primary colors.",
                  "What is 12 times 12? Answer briefly.", "Give one tip for learning to program.",
                  "Explain what a rainbow is in two sentences.", "List four animals that live in the ocean.",
                  "What is the capital of Japan?", "Describe a cat to a child.")


def kv_throughput(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int) -> dict[str, float]:
    """Steady decode t/s at N=len(prompts) with each KV type (f16 first)."""
    return {kv: engine_decode_tps(model_path, prompts, max_tokens, threads, n_ctx, kv_type=kv)
            for kv in ("f16", *KV_COMPARED)}


def greedy_tokens(model_path, requests: list[GenerationRequest], threads: int, n_ctx: int, kv_type: str):
    with _engine(model_path, threads, len(requests), n_ctx, kv_type=kv_type) as engine:
        handles = [engine.submit(r) for r in requests]
        return [h.result(timeout=900).token_ids for h in handles]


def agreement(reference: list[list[int]], other: list[list[int]]) -> float:
    """Mean share of each request's tokens before its first divergence from the reference."""
    shares = []
    for ref, out in zip(reference, other, strict=True):
        same = next((i for i, (a, b) in enumerate(zip(ref, out, strict=False)) if a != b), min(len(ref), len(out)))
        shares.append(same / max(len(ref), 1))
    return sum(shares) / max(len(shares), 1)


def kv_agreement(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int) -> dict[str, float]:
    """Per quantized type: greedy agreement with f16 on the chat questions (`<kv>`), the share of those requests
    whose tokens are all the same (`<kv>_identical`), and the agreement on the raw throughput prompts
    (`<kv>_raw`)."""
    chat = [GenerationRequest(messages=[{"role": "user", "content": q}], max_tokens=max_tokens, sampling=GREEDY)
            for q in CHAT_QUESTIONS]
    raw = [fixed_length_request(p, max_tokens) for p in prompts]
    result = {}
    for name, requests in (("", chat), ("_raw", raw)):
        reference = greedy_tokens(model_path, requests, threads, n_ctx, "f16")
        for kv in KV_COMPARED:
            tokens = greedy_tokens(model_path, requests, threads, n_ctx, kv)
            result[kv + name] = agreement(reference, tokens)
            if not name:
                result[f"{kv}_identical"] = sum(a == b for a, b in zip(reference, tokens, strict=True)) / len(chat)
    return result
