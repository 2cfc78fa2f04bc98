"""EngineBridge: the one object through which the UI reaches the engine and every other backend.

It owns the main local Engine (the pane backend `MAIN`, "local") and a BackendRegistry of the others (more
local models, servers), opens them off the GUI thread (asyncio on qasync's loop), and turns their per-step
callbacks — which run on engine and HTTP threads — into one queued Qt signal delivered on the GUI thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.engine import Engine, EngineConfig, GenerationRequest, ModelInfo, RequestHandle, StatsSnapshot, limits
from app.session.backends import MAIN, BackendRegistry, BackendSpec

log = logging.getLogger("chorus.ui.bridge")


class ModelLoadError(RuntimeError):
    """Loading a model failed; the previous model (if any) stays loaded."""


class EngineBridge(QObject):
    sig_step = Signal(object)
    """One StepEvent per engine step (text deltas, states, completions), delivered on the GUI thread."""
    sig_loading = Signal(str)
    """A model started loading (its path)."""
    sig_model_loaded = Signal(object)
    """A model finished loading and is ready (its ModelInfo)."""
    sig_error = Signal(str)
    """Something failed that the user should read (e.g. a bad model file); the app carries on."""
    sig_backends_changed = Signal()
    """A backend was added or removed: pane headers and the stats panel list the new set."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._engine: Engine | None = None
        self._unsubscribers: dict[int, object] = {}
        self.loading = False
        self._lock = threading.Lock()  # guards _closed and _just_loaded between the loader thread and close()
        self._closed = False
        self._just_loaded: Engine | None = None  # built by the loader thread, not yet swapped in
        self.backends = BackendRegistry(self.sig_step.emit)  # every backend but MAIN

    @property
    def engine(self) -> Engine | None:
        return self._engine

    @property
    def model_info(self) -> ModelInfo | None:
        return self._engine.model_info if self._engine else None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def ready(self) -> bool:
        return self._engine is not None and not self.loading

    async def load_model(self, path: str | Path, *, n_slots: int, n_ctx_per_slot: int, n_threads: int,
                         chat_format: str = "auto", reproducible: bool = limits.REPRODUCIBLE_DEFAULT,
                         kv_type: str = limits.KV_TYPE_DEFAULT,
                         n_gpu_layers: int | str | None = limits.GPU_LAYERS_DEFAULT) -> ModelInfo:
        """Build a new engine in a worker thread; swap it in only if it loads. Raises ModelLoadError.

        If the bridge is closed while the model loads, the new engine is closed as soon as it exists."""
        if self.loading:
            raise ModelLoadError("a model is already loading")
        if self._closed:
            raise ModelLoadError("the window is closing")
        self.loading = True
        self.sig_loading.emit(str(path))
        try:
            config = EngineConfig(model_path=path, n_slots=n_slots, n_ctx_per_slot=n_ctx_per_slot,
                                  n_threads=n_threads, chat_format=chat_format, reproducible=reproducible,
                                  kv_type=kv_type, n_gpu_layers=n_gpu_layers)
            engine = await asyncio.to_thread(self._build, config)
            with self._lock:
                claimed, self._just_loaded = self._just_loaded is engine, None
            if not claimed:  # close() took it while this coroutine waited to resume
                raise ModelLoadError("the window closed while the model was loading")
        except Exception as exc:
            message = f"Could not load {Path(path).name}: {exc}"
            log.warning(message)
            self.sig_error.emit(message)
            raise ModelLoadError(message) from exc
        finally:
            self.loading = False
        old = self._swap(engine)
        if old is not None:
            await asyncio.to_thread(self._retire, old)
        self.sig_model_loaded.emit(engine.model_info)
        return engine.model_info

    def _build(self, config: EngineConfig) -> Engine:
        """Loader thread: make the engine, or close it at once if the bridge closed meanwhile."""
        engine = Engine(config)
        with self._lock:
            if not self._closed:
                self._just_loaded = engine
                return engine
        engine.close()
        raise ModelLoadError("the window closed while the model was loading")

    def _take_just_loaded(self) -> Engine | None:
        with self._lock:
            self._closed = True
            engine, self._just_loaded = self._just_loaded, None
        return engine

    def _swap(self, engine: Engine | None) -> Engine | None:
        old, self._engine = self._engine, engine
        if engine is not None:
            # Runs on the engine thread; emitting from there makes Qt queue it to the GUI thread.
            self._unsubscribers[id(engine)] = engine.subscribe(self.sig_step.emit)
        return old

    def _retire(self, engine: Engine) -> None:
        """Close an engine that was swapped out; it stays subscribed until then, so its requests' final
        "cancelled" events still reach their panes."""
        engine.close()
        unsubscribe = self._unsubscribers.pop(id(engine), None)
        if unsubscribe:
            unsubscribe()

    def backend_names(self) -> list[str]:
        """What a pane can choose: MAIN first, then every added backend."""
        return [MAIN, *self.backends.names()]

    async def add_backend(self, spec: BackendSpec, api_key: str | None = None,
                          engine: dict | None = None) -> BackendSpec:
        """Open another local model or a server off the GUI thread; returns its spec as opened (a server's
        default model resolved). Raises with a message for the user."""
        if self._closed:
            raise RuntimeError("the window is closing")
        opened = await asyncio.to_thread(self.backends.open, spec, api_key=api_key, engine=engine)
        if self._closed:  # the window closed while it opened: close it too
            await asyncio.to_thread(self.backends.close, opened.name)
            raise RuntimeError("the window closed while the backend was opening")
        self.sig_backends_changed.emit()
        return opened

    async def remove_backend(self, name: str) -> None:
        await asyncio.to_thread(self.backends.close, name)
        self.sig_backends_changed.emit()

    def submit(self, request: GenerationRequest, backend: str = MAIN) -> RequestHandle:
        """Send a request to the named backend; raises RuntimeError saying what is missing."""
        if backend != MAIN:
            other = self.backends.get(backend)
            if other is None:
                raise RuntimeError(f"{backend} is not connected: add it in Model → Backends…, or pick another "
                                   "backend in the pane's header.")
            return other.submit(request)
        if not self.ready:
            raise RuntimeError("No model is loaded yet." if not self.loading else "The model is still loading.")
        return self._engine.submit(request)

    def cancel(self, handle: RequestHandle) -> None:
        handle.cancel()

    def cancel_all(self) -> None:
        if self._engine:
            self._engine.cancel_all()
        self.backends.cancel_all()

    def stats(self, backend: str = MAIN) -> StatsSnapshot | None:
        if backend != MAIN:
            other = self.backends.get(backend)
            return other.stats() if other is not None else None
        return self._engine.stats() if self._engine else None

    def reset_stats(self, backend: str = MAIN) -> None:
        target = self._engine if backend == MAIN else getattr(self.backends.get(backend), "engine", None)
        if target is not None:
            target.reset_stats()

    def busy(self) -> bool:
        """Whether the main model generates (what reloading it would interrupt)."""
        snap = self.stats()
        return bool(snap and (snap.active or snap.queued))

    def _detach_all(self) -> list[Engine]:
        """Mark the bridge closed and take every engine it has: the one still loading and the current one."""
        return [e for e in (self._take_just_loaded(), self._swap(None)) if e is not None]

    def close(self) -> None:
        """Stop the engine, one still loading and every other backend (cancels everything; waits at most ~2 s
        per engine)."""
        for engine in self._detach_all():
            self._retire(engine)
        self.backends.close_all()

    async def unload(self) -> None:
        """Stop and free the current engine (its runs end "cancelled"); the bridge stays open for a later load."""
        engine = self._swap(None)
        if engine is not None:
            await asyncio.to_thread(self._retire, engine)

    async def aclose(self) -> None:
        for engine in self._detach_all():
            await asyncio.to_thread(self._retire, engine)
        await asyncio.to_thread(self.backends.close_all)
