"""Embedding backends on the real SmolLM2 GGUF: the local pooled embedder against llama-server's /v1/embeddings
(same GGUF, mean pooling), the server embedder through the openai client, and the weak-embedder note.

SmolLM2 is a generative model, so these vectors are a weak embedding; what is tested here is that Chorus pools
and normalises exactly as llama-server does, not that the vectors capture meaning well."""

import numpy as np
import pytest

from app.backends.embedding import EmbeddingError, LocalEmbedder, ServerEmbedder, open_embedder
from tests.conftest import TEST_THREADS

TEXTS = ["The cat sat on the mat.", "Paris is the capital of France.",
         "def add(a, b):\n    return a + b", "Ünïcödé and emoji 🎉 work too", "x",
         "A much longer answer that rambles on for a while about the weather, the sea, and the price of fish " * 4]


@pytest.fixture(scope="module")
def local(model_path):
    embedder = LocalEmbedder(model_path, pooling="mean", n_threads=TEST_THREADS)
    yield embedder
    embedder.close()


def test_local_vectors_are_unit_length_and_batch_independent(local):
    together = local.embed(TEXTS)
    assert together.shape == (len(TEXTS), local.dim)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.vstack([local.embed([text]) for text in TEXTS])
    cosines = np.sum(together * alone, axis=1)
    # Not bit-identical: a batch of other shapes takes other matmul paths (measured 5e-4 at worst on Q4_1).
    assert cosines.min() > 1 - 1e-3, cosines


def test_main_model_is_flagged_as_a_weak_embedder(model_path):
    embedder = open_embedder("local", model_path, n_threads=TEST_THREADS)
    try:
        assert embedder.weak and "weak embedder" in embedder.note
    finally:
        embedder.close()
    with pytest.raises(EmbeddingError, match="no main model"):
        open_embedder("local", None)


@pytest.mark.servers
def test_local_matches_llama_server_embeddings(local, start_llama_server):
    # -kvu: with per-slot KV (its default at -np 4) llama-server splits a batch of mixed-length texts across
    # ubatches and pools each over its last ubatch only (measured: cosine 0.87 to its own one-text answer).
    server = start_llama_server("--embeddings", "--pooling", "mean", "-kvu")
    remote = ServerEmbedder(server.url)
    try:
        theirs = remote.embed(TEXTS)
    finally:
        remote.close()
    ours = local.embed(TEXTS)
    assert theirs.shape == ours.shape
    cosines = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    assert cosines.min() > 1 - 1e-3, cosines


@pytest.mark.servers
def test_server_down_names_the_url():
    from tests.fixtures.servers import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    embedder = ServerEmbedder(url, timeout=5)
    with pytest.raises(EmbeddingError, match=f"127.0.0.1:{url.split(':')[-1].split('/')[0]}"):
        embedder.embed(["hello"])
