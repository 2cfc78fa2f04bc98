"""Meaning: answers compared by meaning, embedded on a worker thread so the owner (the GUI thread) never waits.

The owner asks `similarity(a, b)` or `stability(texts)`; what is not embedded yet is queued for the worker and
the answer is None until it is (`pending` says how many texts wait). The worker, one thread named `WORKER`,
opens the embedder on first use (`configure` says which: Settings → Embedder) and embeds queued texts in
batches; finished vectors wait in a thread-safe inbox until the owner calls `pump()` (the worker calls `notify`
to wake it), which stores them and emits `events.changed`. So the vectors, the error and the events only change
on the owner's thread, as SessionRunner's results do. Invariants: a text is embedded at most once per
configuration; an embedder that fails (a bad path, a server down) sets `error` to its message and nothing more
is asked of it until `configure` names one again; `embedded_on` holds the name of every thread that ran an
embedding. `prefetch(texts, then)` calls `then()` on the owner's thread once every text has a vector or the
embedder failed (the window's `similar` assertions wait on it). Qt-free.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from psygnal import Signal, SignalGroup

from app.backends.embedding import DEFAULT_EMBEDDER, WEAK_NOTE, EmbeddingError, open_embedder
from app.models import model_name
from app.session.stability import CLUSTER_DISTANCE, Stability, cluster_vectors

WORKER = "chorus-meaning"


class MeaningEvents(SignalGroup):
    changed = Signal()
    """Vectors arrived, the embedder failed, or another embedder was configured: similarities may have changed."""


def describe(spec: str, main_model: str | None) -> tuple[str, str]:
    """(name, note) of the embedder `spec` names: the note says when it is the main model, a weak embedder."""
    spec = (spec or DEFAULT_EMBEDDER).strip()
    if spec == "local":
        shown = model_name(main_model) if main_model else "no model loaded"
        return f"main model ({shown})", WEAK_NOTE
    return (spec if spec.startswith(("http://", "https://")) else model_name(spec)), ""


class Meaning:
    def __init__(self, notify: Callable[[], None] = lambda: None,
                 threshold: float = CLUSTER_DISTANCE.default):
        """`notify()` is called from the worker thread when results wait for `pump()`."""
        self.events = MeaningEvents()
        self.notify, self.threshold = notify, threshold
        self.name, self.note, self.error = "", "", ""
        self.embedded_on: set[str] = set()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=WORKER)
        self._inbox: deque[tuple] = deque()
        self._vectors: dict[str, np.ndarray] = {}
        self._queued: set[str] = set()
        self._waiters: list[tuple[list[str], Callable[[], None]]] = []
        self._generation = 0
        self._key: tuple | None = None
        self._opener: Callable[[], object] | None = None
        self._embedder = None  # the worker's: opened, used and closed on the worker thread only
        self._opened_for = -1
        self._failure = ""
        self._closed = False  # after close(): nothing is configured or queued again (the worker is gone)

    # --- configuration (owner thread) ---------------------------------------------------------------------------
    def configure(self, spec: str, main_model: str | None, api_key: str | None = None,
                  n_threads: int = 2) -> None:
        """Embed with `spec` ("local" = the main model, a GGUF path, a server URL) from now on; the same spec and
        main model again changes nothing (vectors are kept)."""
        key = ((spec or DEFAULT_EMBEDDER).strip(), main_model)
        if key == self._key or self._closed:
            return
        self._key = key
        self.name, self.note = describe(*key)
        self._reset(lambda: open_embedder(key[0], main_model, api_key=api_key, n_threads=n_threads))

    def _reset(self, opener: Callable[[], object]) -> None:
        self._generation += 1
        self._vectors.clear()
        self._queued.clear()
        self.error = ""
        self._opener = opener
        waiters, self._waiters = self._waiters, []
        self.events.changed.emit()
        for _texts, then in waiters:  # answered from the new embedder once asked again
            then()

    @property
    def weak(self) -> bool:
        return bool(self.note)

    @property
    def pending(self) -> int:
        """Texts queued for the worker and not embedded yet."""
        return len(self._queued)

    # --- questions (owner thread) -------------------------------------------------------------------------------
    def vector(self, text: str) -> np.ndarray | None:
        return self._vectors.get(text)

    def ready(self, texts: list[str]) -> bool:
        return all(t in self._vectors for t in texts)

    def request(self, texts: list[str]) -> None:
        """Queue for the worker each text that has no vector and is not queued (nothing after a failure)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors and t not in self._queued]
        if not missing or self.error or self._opener is None:
            return
        self._queued.update(missing)
        self._executor.submit(self._work, self._generation, missing)

    def similarity(self, a: str, b: str) -> float | None:
        """Cosine similarity of two answers' embeddings, or None until both are embedded (or after a failure)."""
        va, vb = self._vectors.get(a), self._vectors.get(b)
        if va is None or vb is None:
            self.request([a, b])
            return None
        norms = float(np.linalg.norm(va) * np.linalg.norm(vb))
        return float(va @ vb) / norms if norms > 0 else 0.0

    def stability(self, texts: list[str]) -> Stability | None:
        """The answers clustered by meaning (stability.py), or None until all are embedded."""
        if not self.ready(texts):
            self.request(texts)
            return None
        return cluster_vectors(np.vstack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1)),
                               self.threshold)

    def embed_cached(self, texts: list[str]) -> np.ndarray:
        """The stored vectors of `texts` (an embedder's `embed` for `similar` once `prefetch` has answered);
        raises EmbeddingError with the embedder's failure when one is missing."""
        if not self.ready(texts):
            raise EmbeddingError(self.error or f"{self.name}: not embedded yet")
        return np.vstack([self._vectors[t] for t in texts])

    def will_wait(self, texts: list[str]) -> bool:
        """Whether `prefetch(texts, ...)` would wait for the worker (rather than answer at once)."""
        return not (self.ready(texts) or self.error or self._opener is None)

    __call__ = embed_cached  # the `embed(texts) -> vectors` that `similar` calls

    def prefetch(self, texts: list[str], then: Callable[[], None]) -> None:
        """Call `then()` on the owner's thread once every text has a vector or the embedder failed (at once,
        when `will_wait` is False)."""
        if not self.will_wait(texts):
            then()
            return
        self._waiters.append((list(texts), then))
        self.request(texts)

    # --- results (owner thread) ---------------------------------------------------------------------------------
    def pump(self) -> None:
        """Store what the worker finished and tell the listeners (and the waiters) once."""
        changed = False
        while self._inbox:
            generation, texts, vectors, failure = self._inbox.popleft()
            if generation != self._generation:
                continue  # embedded for an embedder configured away since
            self._queued.difference_update(texts)
            if failure:
                self.error = failure
            else:
                self._vectors.update(zip(texts, vectors, strict=True))
            changed = True
        if not changed:
            return
        if self.error:
            self._queued.clear()
        self.events.changed.emit()
        waiting, self._waiters = self._waiters, []
        for texts, then in waiting:
            if self.ready(texts) or self.error:
                then()
            else:
                self._waiters.append((texts, then))

    # --- the worker thread --------------------------------------------------------------------------------------
    def _work(self, generation: int, texts: list[str]) -> None:
        if generation != self._generation:
            return  # configured away while queued
        try:
            if self._opened_for != generation:
                self._close_embedder()
                self._opened_for, self._failure = generation, ""
                try:
                    self._embedder = self._opener()
                except Exception as exc:  # noqa: BLE001 - a bad path or URL: said once, in the view
                    self._failure = f"the embedder {self.name} could not be opened: {exc}"
            if self._failure:
                raise EmbeddingError(self._failure)
            vectors = np.asarray(self._embedder.embed(texts), np.float32)
            self.embedded_on.add(threading.current_thread().name)
            self._inbox.append((generation, texts, vectors, ""))
        except Exception as exc:  # noqa: BLE001 - the embedder's own message
            self._inbox.append((generation, texts, None, str(exc) or type(exc).__name__))
        self.notify()

    def _close_embedder(self) -> None:
        embedder, self._embedder = self._embedder, None
        if embedder is not None:
            embedder.close()

    def close(self) -> None:
        """Drop what is queued and close the embedder on the worker; returns at once. Later calls ask nothing."""
        if self._closed:
            return
        self._closed = True
        self._generation += 1
        self._opener = None
        self._executor.submit(self._close_embedder)
        self._executor.shutdown(wait=False, cancel_futures=False)
