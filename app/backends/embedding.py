"""Embedding backends: a text's meaning as a vector (promptfoo's `similar`, the meaning similarity, answer clusters).

- `LocalEmbedder`: a GGUF through llama.cpp's pooling, in a model and context of its own (embeddings on), so no
  generation engine's context is touched. Pooling is the GGUF's `<arch>.pooling_type`, else mean; every vector is
  L2-normalised, as llama-server's /v1/embeddings returns it (`embd_normalize` 2). Texts are tokenized as the
  server tokenizes them (special tokens added and parsed); one longer than `max_tokens` is cut to its first
  `max_tokens` tokens (`truncated` counts them).
- `ServerEmbedder`: an OpenAI-compatible server's /v1/embeddings through the `openai` client, vectors as sent.
- `open_embedder(spec, main_model)`: "local" (the default, `DEFAULT_EMBEDDER`) is the main model, a generative
  model and so a weak embedder (`weak` is True and `note` says so); a GGUF path; or a server URL.
Qt-free. An embedder is safe from any thread (a lock serialises its calls).
"""

from __future__ import annotations

import threading
from pathlib import Path

import llama_cpp
import numpy as np

from app.engine.context import TokenBatch
from app.engine.native import LlamaModel

# The embedder `similar`, meaning similarity and answer clusters use when none is named: "local" = the main model
# (else a GGUF path or a server URL); the CLI and the settings store default to it.
DEFAULT_EMBEDDER = "local"
WEAK_NOTE = ("the main model is a generative model, a weak embedder: its similarities separate topics, not "
             "paraphrases from different answers; name an embedding GGUF or server for real meaning")
POOLINGS = {"mean": llama_cpp.LLAMA_POOLING_TYPE_MEAN, "cls": llama_cpp.LLAMA_POOLING_TYPE_CLS,
            "last": llama_cpp.LLAMA_POOLING_TYPE_LAST}


class EmbeddingError(RuntimeError):
    """The embedder could not embed: the message names the model or URL and the cause."""


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


class LocalEmbedder:
    """A GGUF's pooled, L2-normalised embeddings. `pooling`: "mean", "cls", "last", or None (the GGUF's, else
    mean). Several texts share one decode (up to `max_seqs` texts and `max_tokens` tokens)."""

    def __init__(self, path: str | Path, pooling: str | None = None, n_threads: int = 2, max_tokens: int = 2048,
                 max_seqs: int = 16, weak: bool = False):
        self.model = LlamaModel(path)
        self.path, self.weak, self.max_tokens, self.max_seqs = str(path), weak, max_tokens, max_seqs
        self.name = f"local: {Path(path).name}"
        self.note = WEAK_NOTE if weak else ""
        self.truncated = 0
        self.pooling = POOLINGS[pooling] if pooling else self._gguf_pooling()
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = max_tokens
        params.n_seq_max = max_seqs
        params.n_threads = params.n_threads_batch = n_threads
        params.embeddings = True
        params.pooling_type = self.pooling
        params.kv_unified = True  # texts of any lengths share one ubatch
        self.ctx = llama_cpp.llama_init_from_model(self.model.ptr, params)
        if not self.ctx:
            self.model.close()
            raise EmbeddingError(f"llama.cpp could not create an embedding context for {Path(path).name}")
        self.dim = llama_cpp.llama_model_n_embd_out(self.model.ptr)
        self._batch = TokenBatch(max_tokens)
        self._lock = threading.Lock()

    def _gguf_pooling(self) -> int:
        arch = self.model.meta("general.architecture")
        value = self.model.meta(f"{arch}.pooling_type")
        found = int(value) if value.lstrip("-").isdigit() else llama_cpp.LLAMA_POOLING_TYPE_NONE
        return found if found in POOLINGS.values() else llama_cpp.LLAMA_POOLING_TYPE_MEAN

    def _tokens(self, text: str) -> list[int]:
        tokens = self.model.tokenize(text, add_special=True) or [max(self.model.bos_id, 0)]
        if len(tokens) > self.max_tokens:
            self.truncated += 1
            tokens = tokens[:self.max_tokens]
        return tokens

    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text (float32, shape (len(texts), dim))."""
        out = np.zeros((len(texts), self.dim), np.float32)
        with self._lock:
            if self.ctx is None:
                raise EmbeddingError(f"{self.name} is closed")
            pending = [(i, self._tokens(text)) for i, text in enumerate(texts)]
            while pending:
                group, used = [], 0
                while pending and len(group) < self.max_seqs and used + len(pending[0][1]) <= self.max_tokens:
                    group.append(pending.pop(0))
                    used += len(group[-1][1])
                self._decode(group, out)
        return _normalise(out)

    def _decode(self, group: list[tuple[int, list[int]]], out: np.ndarray) -> None:
        batch = self._batch
        batch.clear()
        for seq, (_index, tokens) in enumerate(group):
            start = batch.n_tokens
            batch.add(tokens, 0, seq, output_last=True)
            batch.logits[start:batch.n_tokens] = 1  # pooling reads every token's output
        batch.struct.n_tokens = batch.n_tokens
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self.ctx), True)
        status = llama_cpp.llama_decode(self.ctx, batch.struct)
        if status != 0:
            raise EmbeddingError(f"{self.name}: llama_decode failed with status {status}")
        for seq, (index, _tokens) in enumerate(group):
            pointer = llama_cpp.llama_get_embeddings_seq(self.ctx, seq)
            if not pointer:
                raise EmbeddingError(f"{self.name}: llama.cpp returned no pooled embedding")
            out[index] = np.ctypeslib.as_array(pointer, shape=(self.dim,))

    def close(self) -> None:
        with self._lock:
            if self.ctx:
                llama_cpp.llama_free(self.ctx)
                self.ctx = None
                self.model.close()


class ServerEmbedder:
    """A server's /v1/embeddings (llama-server with --embeddings, vLLM, OpenAI...)."""

    weak = False
    note = ""

    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None, timeout: float = 60.0):
        import openai

        self.url, self.model = base_url.rstrip("/"), model
        self.name = f"server: {self.url}"
        self._client = openai.OpenAI(base_url=self.url, api_key=api_key or "none", timeout=timeout, max_retries=0)
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        import openai

        if not texts:
            return np.zeros((0, 0), np.float32)
        try:
            with self._lock:
                reply = self._client.embeddings.create(model=self.model or "default", input=list(texts),
                                                       encoding_format="float")
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"{self.url}/embeddings: {exc}") from exc
        rows = sorted(reply.data, key=lambda item: item.index)
        if len(rows) != len(texts):
            raise EmbeddingError(f"{self.url}/embeddings sent {len(rows)} vectors for {len(texts)} texts")
        return np.asarray([row.embedding for row in rows], np.float32)

    def close(self) -> None:
        self._client.close()


def open_embedder(spec: str, main_model: str | Path | None = None, api_key: str | None = None, n_threads: int = 2):
    """"local" (or "") = the main model (weak); a URL = a server; anything else = a GGUF path. Raises
    EmbeddingError (server) or the model loader's error (a missing or bad GGUF)."""
    spec = (spec or DEFAULT_EMBEDDER).strip()
    if spec.startswith(("http://", "https://")):
        return ServerEmbedder(spec, api_key=api_key)
    if spec == "local":
        if main_model is None:
            raise EmbeddingError("the embedder is the main model, and no main model is loaded")
        return LocalEmbedder(main_model, n_threads=n_threads, weak=True)
    return LocalEmbedder(spec, n_threads=n_threads)
