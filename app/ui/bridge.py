"""EngineBridge: the window's backends — the main local model and every other one — opened off the GUI thread.

Every backend, the main model included, is a `Backend` in one `BackendRegistry` (`self.backends`), which is
also what the session runner submits to. The bridge loads models and opens backends on worker threads (asyncio
on qasync's loop) and hands every backend's step events to its step listeners (the runner's thread-safe
`feed`), from whichever thread the backend publishes on.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.backends import LocalBackend
from app.backends.registry import MAIN, BackendRegistry, BackendSpec
from app.engine import EngineConfig, ModelInfo, StatsSnapshot, StepEvent, limits

log = logging.getLogger("chorus.ui.bridge")


class ModelLoadError(RuntimeError):
    """Loading a model failed; the previous model (if any) stays loaded."""


class EngineBridge(QObject):
    sig_loading = Signal(str)
    """A model started loading (its path)."""
    sig_model_loaded = Signal(object)
    """A model finished loading and is ready (its ModelInfo)."""
    sig_error = Signal(str)
    """Something failed that the user should read (e.g. a bad model file); the app carries on."""
    sig_backends_changed = Signal()
    """A backend was added or removed, or a local model loaded or unloaded: pane headers, the stats panel and
    the Backends dialog list the new set."""
    _sig_registry = Signal()
    """A local model loaded or unloaded on a worker thread (the registry's events); queued to the GUI thread."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._listeners: tuple[Callable[[StepEvent], None], ...] = ()
        self.loading = False
        self._lock = threading.Lock()  # guards _closed and _just_loaded between the loader thread and close()
        self._closed = False
        self._just_loaded: LocalBackend | None = None  # built by the loader thread, not yet swapped in
        self.backends = BackendRegistry(self._on_step)
        self._sig_registry.connect(self.sig_backends_changed)
        self.backends.events.loaded.connect(lambda _name: self._sig_registry.emit())
        self.backends.events.unloaded.connect(lambda _name: self._sig_registry.emit())

    def add_step_listener(self, fn: Callable[[StepEvent], None]) -> None:
        """`fn(event)` gets every backend's step events, on the backend's own thread (so: thread-safe)."""
        self._listeners = (*self._listeners, fn)

    def remove_step_listener(self, fn: Callable[[StepEvent], None]) -> None:
        self._listeners = tuple(f for f in self._listeners if f != fn)  # equal, not identical: a bound method is
        # a new object each time it is read (`runner.feed is runner.feed` is False)

    def _on_step(self, event: StepEvent) -> None:
        for fn in self._listeners:
            fn(event)

    # --- the main model ---------------------------------------------------------------------------------------
    @property
    def main(self) -> LocalBackend | None:
        return self.backends.main

    @property
    def model_info(self) -> ModelInfo | None:
        """What the GGUF of the main model says (None while none is loaded)."""
        main = self.main
        return main.model_info.local if main is not None else None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def ready(self) -> bool:
        return self.main is not None and not self.loading

    async def load_model(self, path: str | Path, *, n_slots: int, n_ctx_per_slot: int, n_threads: int,
                         chat_format: str = "auto", tool_format: str = "auto",
                         reproducible: bool = limits.REPRODUCIBLE_DEFAULT,
                         mixed_step_factor: float = limits.PACING[limits.PACING_DEFAULT],
                         kv_type: str = limits.KV_TYPE_DEFAULT,
                         n_gpu_layers: int | str | None = limits.GPU_LAYERS_DEFAULT,
                         mmproj: str | None = None) -> ModelInfo:
        """Build the new main model in a worker thread; swap it in only if it loads. Raises ModelLoadError.
        The old one is closed after the swap, off the GUI thread; its last requests' ends are still heard."""
        if self.loading:
            raise ModelLoadError("a model is already loading")
        if self._closed:
            raise ModelLoadError("the window is closing")
        self.loading = True
        self.sig_loading.emit(str(path))
        try:
            config = EngineConfig(model_path=path, n_slots=n_slots, n_ctx_per_slot=n_ctx_per_slot,
                                  n_threads=n_threads, chat_format=chat_format, tool_format=tool_format,
                                  reproducible=reproducible, mixed_step_factor=mixed_step_factor,
                                  kv_type=kv_type, n_gpu_layers=n_gpu_layers, mmproj=mmproj or None)
            backend = await asyncio.to_thread(self._build, config)
            with self._lock:
                claimed, self._just_loaded = self._just_loaded is backend, None
            if not claimed:  # close() took it while this coroutine waited to resume
                raise ModelLoadError("the window closed while the model was loading")
        except Exception as exc:
            message = f"Could not load {Path(path).name}: {exc}"
            log.warning(message)
            self.sig_error.emit(message)
            raise ModelLoadError(message) from exc
        finally:
            self.loading = False
        old = self.backends.set_main(backend)
        if old is not None:
            await asyncio.to_thread(old.close)
        info = backend.model_info.local
        self.sig_model_loaded.emit(info)
        return info

    def _build(self, config: EngineConfig) -> LocalBackend:
        """Loader thread: make the backend, or close it at once if the bridge closed meanwhile."""
        backend = LocalBackend(config)
        with self._lock:
            if not self._closed:
                self._just_loaded = backend
                return backend
        backend.close()
        raise ModelLoadError("the window closed while the model was loading")

    async def unload(self) -> None:
        """Stop and free the main model (its runs end "cancelled"); the bridge stays open for a later load."""
        old = self.backends.set_main(None)
        if old is not None:
            await asyncio.to_thread(old.close)

    # --- other backends -----------------------------------------------------------------------------------------
    def backend_names(self) -> list[str]:
        """What a pane can choose: MAIN first, then every added backend."""
        return self.backends.offered()

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

    def add_standby(self, spec: BackendSpec, engine: dict | None = None) -> BackendSpec:
        """Offer a local model to panes without loading it (it loads when its panes run); raises ValueError."""
        added = self.backends.add_standby(spec, engine=engine)
        self.sig_backends_changed.emit()
        return added

    async def remove_backend(self, name: str) -> None:
        await asyncio.to_thread(self.backends.close, name)
        self.sig_backends_changed.emit()

    # --- figures and checks ---------------------------------------------------------------------------------------
    def stats(self, backend: str = MAIN) -> StatsSnapshot | None:
        found = self.backends.get(backend)
        return found.stats() if found is not None else None

    def reset_stats(self, backend: str = MAIN) -> None:
        found = self.backends.get(backend)
        if found is not None:
            found.reset_stats()

    def busy(self) -> bool:
        """Whether the main model generates (what reloading it would interrupt)."""
        snap = self.stats()
        return bool(snap and (snap.active or snap.queued))

    def check_grammar(self, grammar: str | None, json_schema: dict | None) -> str | None:
        """The main model's grammar parser (none loaded: the schema converter's checks only)."""
        main = self.main
        return main.check_format(grammar, json_schema) if main is not None else None

    # --- closing ----------------------------------------------------------------------------------------------------
    def _detach_all(self) -> list[LocalBackend]:
        """Mark the bridge closed and take the main model and one still loading."""
        with self._lock:
            self._closed = True
            loading, self._just_loaded = self._just_loaded, None
        return [b for b in (loading, self.backends.set_main(None)) if b is not None]

    def close(self) -> None:
        """Stop every backend (cancels everything; waits at most ~2 s per engine). On quit."""
        for backend in self._detach_all():
            backend.close()
        self.backends.close_all()

    async def aclose(self) -> None:
        for backend in self._detach_all():
            await asyncio.to_thread(backend.close)
        await asyncio.to_thread(self.backends.close_all)
