"""`bench --embeddings`: how fast the local embedder turns answers into vectors, and what clustering them costs.

64 distinct answers of 27 to 77 words (about 60 tokens, a short reply) are embedded by a LocalEmbedder on the main
model (mean pooling, its own llama.cpp context): once batched as `embed(all)` packs them (up to 16 texts per
decode), once one text per call. Each figure is the median of `repetitions` timed runs after one warm-up; the
clustering time is `stability.cluster_vectors` on the batched vectors. With a generative model the embedding
costs a prefill and more: llama.cpp computes the LM head for every token when embeddings are on
(llama-context.cpp, `output_all = cparams.embeddings`); an embedding GGUF has no LM head.
"""

from __future__ import annotations

import time

from app.backends.embedding import LocalEmbedder
from app.bench.workloads import median
from app.models import default_model_path
from app.session.stability import cluster_vectors

ANSWERS = 64
_SUBJECTS = ("the river", "a volcano", "the bee", "a glacier", "the comet", "a forest", "the desert", "the tide")
_CLAUSES = ("it changes slowly over many years", "people have studied it for centuries",
            "its size depends on the season", "scientists measure it with simple tools",
            "children often learn about it at school", "it affects the weather around it",
            "its colour comes from what it is made of", "many animals depend on it to survive")


def answers(n: int = ANSWERS) -> list[str]:
    """n distinct answers, 27 to 77 words each, deterministic."""
    texts = []
    for i in range(n):
        subject = _SUBJECTS[i % len(_SUBJECTS)]
        clauses = [_CLAUSES[(i + k) % len(_CLAUSES)] for k in range(3 + i % 7)]
        texts.append(f"Answer {i}: {subject} is remarkable because " + ", and ".join(clauses) + ".")
    return texts


def embedding_bench(threads: int, repetitions: int = 3, path=None, n: int = ANSWERS) -> dict:
    texts = answers(n)
    embedder = LocalEmbedder(path or default_model_path(), n_threads=threads, weak=path is None)
    try:
        tokens = sum(len(embedder.model.tokenize(t, add_special=True)) for t in texts)
        embedder.embed(texts)  # warm-up
        batched, single, cluster = [], [], []
        for _ in range(repetitions):
            start = time.perf_counter()
            vectors = embedder.embed(texts)
            batched.append(time.perf_counter() - start)
            start = time.perf_counter()
            for text in texts:
                embedder.embed([text])
            single.append(time.perf_counter() - start)
            start = time.perf_counter()
            cluster_vectors(vectors)
            cluster.append(time.perf_counter() - start)
    finally:
        embedder.close()
    b, s = median(batched), median(single)
    return {"model": embedder.name, "answers": len(texts), "tokens": tokens, "threads": threads,
            "batched_s": b, "batched_answers_per_s": len(texts) / b, "batched_tokens_per_s": tokens / b,
            "one_by_one_s": s, "one_by_one_answers_per_s": len(texts) / s, "cluster_s": median(cluster)}


def describe(result: dict) -> str:
    return (f"Embedding {result['answers']} answers ({result['tokens']} tokens) with {result['model']}, "
            f"{result['threads']} threads:\n"
            f"  batched:    {result['batched_s'] * 1000:.0f} ms = {result['batched_answers_per_s']:.0f} answers/s, "
            f"{result['batched_tokens_per_s']:.0f} tokens/s\n"
            f"  one by one: {result['one_by_one_s'] * 1000:.0f} ms = {result['one_by_one_answers_per_s']:.0f} "
            f"answers/s\n"
            f"  clustering the {result['answers']} vectors: {result['cluster_s'] * 1000:.1f} ms")
