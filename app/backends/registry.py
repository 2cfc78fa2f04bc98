"""The backends a window or a script can send panes to, by the name each pane stores (`PaneSpec.backend`).

`MAIN` ("local") is the main local model, the one Model → Open loads (`set_main`); the registry holds it and the
others behind the same Backend protocol: more local GGUF models (each its own engine; engines generating at once
share the cores, app/engine/core_share.py) and OpenAI-compatible servers. A BackendSpec (spec.py) is what gets saved (in
the app's settings; never an API key, which goes to app.backends.KeyStore); `BackendRegistry.open` builds the
Backend. Every backend publishes its StepEvents to `on_step` until it is garbage: a backend that is closed stays
subscribed, so the "cancelled" ends of its last requests are always heard, however long its close takes.

A local model can also be on standby: known by name and offered to panes (`offered`), but not loaded
(`add_standby`, or `unload` of a loaded one, the main model included). `load` brings it in with the engine
settings it was given; app.backends.shifts does that for models that do not fit in memory together, in shifts.
A name is never both loaded and on standby, and a model being loaded is loaded once. `events` says when a local
model has loaded and when one has been closed (its memory freed), on the thread that did it; every method takes
the registry's lock for its state and emits outside it. Qt-free; thread-safe.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from psygnal import Signal, SignalGroup

from app.backends.base import Backend
from app.backends.local import LocalBackend
from app.backends.openai_backend import OpenAIBackend
from app.backends.spec import KINDS, MAIN, BackendSpec
from app.engine import EngineConfig, StepEvent
from app.models import model_name


class RegistryEvents(SignalGroup):
    loaded = Signal(str)
    """A local model finished loading through `open` or `load` (its backend name; MAIN for the main model)."""
    unloaded = Signal(str)
    """A local model was closed through `close`, `unload` or `close_all`: its memory is free again."""


class BackendRegistry:
    """Open backends by name, MAIN first, and local models on standby. Every open one publishes its StepEvents
    to `on_step`. Request ids never collide: every backend draws them from one counter (app.engine.next_request_id)."""

    def __init__(self, on_step: Callable[[StepEvent], None]):
        self._on_step = on_step
        self._lock = threading.Lock()
        self._main: Backend | None = None
        self._open: dict[str, tuple[BackendSpec, Backend, Callable[[], None]]] = {}
        self._standby: dict[str, tuple[BackendSpec, EngineConfig]] = {}  # local models known but not loaded
        self._loading: set[str] = set()
        self._aliases: dict[str, str] = {}  # another name for an open backend (`alias`)
        self._closed = False
        self.events = RegistryEvents()

    def set_main(self, backend: Backend | None) -> Backend | None:
        """Make `backend` the main model (None: none loaded); returns the previous one, for the caller to
        close (off the GUI thread: a close waits for the engine's current step)."""
        if backend is not None:
            backend.subscribe(self._on_step)
        with self._lock:
            old, self._main = self._main, backend
            if backend is not None:
                self._standby.pop(MAIN, None)  # a new main model replaces one a plan had unloaded
        return old

    def open_main(self, spec: BackendSpec, *, api_key: str | None = None, engine: dict | None = None) -> Backend:
        """Build the main backend from a spec (blocking; a local model with these EngineConfig fields, or a server
        asked for its models now) and make it the main one, closing the one it replaces. Raises ValueError (the
        spec's problem), ConnectionError or the engine's own error, with a message for the user."""
        problem = spec.problem()
        if problem:
            raise ValueError(problem)
        if spec.kind == "local":
            backend: Backend = LocalBackend(EngineConfig(**spec.engine_fields(engine)))
        else:
            backend = self._open_server(spec, api_key)
        old = self.set_main(backend)
        if old is not None:
            old.close()
        return backend

    def alias(self, name: str, to: str = MAIN) -> None:
        """Let `name` mean the backend `to` (`run` sends every pane of a session to its one backend this way)."""
        with self._lock:
            self._aliases[name] = to

    @property
    def main(self) -> Backend | None:
        with self._lock:
            return self._main

    def submit(self, request, name: str = MAIN):
        """Send a request to the named backend; raises RuntimeError saying what is missing."""
        backend = self.get(name)
        if backend is None:
            if self.on_standby(name):
                raise RuntimeError(f"{name} is not loaded: it loads when Run all or Run group runs its panes "
                                   "(one model at a time when they do not fit in memory together).")
            if name == MAIN:
                raise RuntimeError("No model is loaded yet.")
            raise RuntimeError(f"{name} is not connected: add it in Model → Backends…, or pick another backend "
                               "in the pane's header.")
        return backend.submit(request)

    def open(self, spec: BackendSpec, *, api_key: str | None = None, engine: dict | None = None) -> BackendSpec:
        """Build and register the backend (blocking: loads a model or asks a server for its models); returns
        the spec as opened (a server's default model resolved to the first one it lists, which is what vLLM
        needs to be named). `engine`: EngineConfig fields for a local model (slots, context, threads...).
        Raises ValueError, ConnectionError or the engine's own error, with a message for the user."""
        problem = spec.problem()
        if problem:
            raise ValueError(problem)
        if spec.kind == "local":
            self._check_new(spec)
            backend: Backend = LocalBackend(EngineConfig(**spec.engine_fields(engine)))
        else:
            backend = self._open_server(spec, api_key)
            spec = dataclasses.replace(spec, model=backend.model_info.model)
            try:
                self._check_new(spec)
            except ValueError:
                backend.close()
                raise
        self._register(spec, backend)
        return spec

    def _register(self, spec: BackendSpec, backend: Backend) -> None:
        unsubscribe = backend.subscribe(self._on_step)
        with self._lock:
            refused = "is already connected" if spec.name in self._open else None  # opened twice at once
            refused = "could not be added: the backends are closed" if self._closed else refused
            if not refused:
                self._open[spec.name] = (spec, backend, unsubscribe)
        if refused:
            backend.close()
            unsubscribe()
            raise ValueError(f"{spec.name} {refused}")
        if spec.kind == "local":
            self.events.loaded.emit(spec.name)

    def _check_new(self, spec: BackendSpec) -> None:
        if spec.name == MAIN or spec.name in self.names() or self.on_standby(spec.name):
            raise ValueError(f"{spec.name} is already connected")

    @property
    def closed(self) -> bool:
        """After `close_all`: nothing loads any more."""
        return self._closed

    @staticmethod
    def _open_server(spec: BackendSpec, api_key: str | None) -> OpenAIBackend:
        """Ask the server for its models now (a failure names the cause before any pane runs)."""
        return OpenAIBackend.open(spec.url, model=spec.model, api_key=api_key, max_concurrency=spec.max_concurrency)

    def get(self, name: str) -> Backend | None:
        with self._lock:
            name = self._aliases.get(name, name)
            if name == MAIN:
                return self._main
            entry = self._open.get(name)
        return entry[1] if entry else None

    def names(self) -> list[str]:
        """The added backends (MAIN is always offered first by the caller: see `offered`)."""
        with self._lock:
            return list(self._open)

    def model_of(self, name: str) -> str:
        """The model a backend runs, as the window names it: a local model's `app.models.model_name` (loaded or on
        standby), the model a server serves; "" when not known (not open, no model loaded)."""
        config = self.config(name)
        if config is not None:
            return model_name(config.model_path)
        backend = self.get(name)
        return (backend.model_info.model or "") if backend is not None else ""

    def label(self, name: str) -> str:
        """A backend as a pane, the comparison table and the stats panel show it: the main model as "main · " and
        its model's name; another backend by its name, which names its model already."""
        if name != MAIN:
            return name
        model = self.model_of(MAIN)
        return f"main · {model}" if model else "main model"

    def offered(self) -> list[str]:
        """What a pane can choose: MAIN, then every added backend, then the local models on standby."""
        return [MAIN, *self.names(), *(spec.name for spec in self.standby_specs())]

    def specs(self) -> list[BackendSpec]:
        with self._lock:
            return [spec for spec, _, _ in self._open.values()]

    def cancel_all(self) -> None:
        with self._lock:
            backends = [backend for _, backend, _ in self._open.values()] + [b for b in [self._main] if b]
        for backend in backends:
            backend.cancel_all()

    # --- local models on standby --------------------------------------------------------------------------------
    def add_standby(self, spec: BackendSpec, *, engine: dict | None = None) -> BackendSpec:
        """Offer a local model to panes without loading it: it loads when its panes run (`load`), with these
        EngineConfig fields. Raises ValueError (not a local model, a missing file, a name already taken)."""
        problem = spec.problem() or (None if spec.kind == "local" else "only a local model can wait on standby")
        if problem:
            raise ValueError(problem)
        self._check_new(spec)
        with self._lock:
            self._standby[spec.name] = (spec, EngineConfig(**spec.engine_fields(engine)))
        return spec

    def on_standby(self, name: str) -> bool:
        with self._lock:
            return name in self._standby

    def standby_specs(self) -> list[BackendSpec]:
        """The added local models on standby (the main model, when a plan unloaded it, is not listed)."""
        with self._lock:
            return [spec for name, (spec, _) in self._standby.items() if name != MAIN]

    def loaded_local(self) -> list[str]:
        """The local models loaded now: MAIN (when a model is), then the added ones."""
        with self._lock:
            main = [MAIN] if self._main is not None and self._main.config is not None else []
            return main + [name for name, (spec, _, _) in self._open.items() if spec.kind == "local"]

    def config(self, name: str) -> EngineConfig | None:
        """The engine settings a local model runs, or will run, with; None for a server or an unknown name."""
        with self._lock:
            if name in self._standby:
                return self._standby[name][1]
        backend = self.get(name)
        return backend.config if backend is not None else None

    def load(self, name: str) -> None:
        """Load a local model on standby (blocking). On failure it stays on standby and the engine's error is
        raised; ValueError if `name` is not on standby (or is being loaded)."""
        with self._lock:
            if name not in self._standby or name in self._loading:
                raise ValueError(f"{name} is not a local model on standby")
            self._loading.add(name)
            spec, config = self._standby[name]
        try:
            backend = LocalBackend(config)
            if name != MAIN:
                with self._lock:
                    self._standby.pop(name, None)
                self._register(spec, backend)
                return
            backend.subscribe(self._on_step)
            with self._lock:
                taken = self._closed or self._main is not None or MAIN not in self._standby
                if not taken:
                    self._main = backend
                    self._standby.pop(MAIN, None)
            if taken:  # closed meanwhile, or another main model was loaded meanwhile: that one stays
                backend.close()
                raise RuntimeError("the main model was not loaded again: the backends are closed or another "
                                   "model became the main one meanwhile")
            self.events.loaded.emit(MAIN)
        finally:
            with self._lock:
                self._loading.discard(name)

    def unload(self, name: str) -> None:
        """Close a loaded local model (its runs end "cancelled") and keep it on standby with the same settings,
        to `load` again later. The main model too: until it loads again no model is the main one."""
        if name == MAIN:
            main = self.main
            if main is not None and main.config is None:
                raise ValueError(f"{name} is a server: only a local model can be unloaded")
            backend = self.set_main(None)
            if backend is None:
                return
            spec = BackendSpec(kind="local", path=str(backend.config.model_path))
        else:
            with self._lock:
                entry = self._open.get(name)
            if entry is None:
                return
            spec, backend = entry[0], entry[1]
            if spec.kind != "local":
                raise ValueError(f"{name} is a server: only a local model can be unloaded")
            with self._lock:
                self._open.pop(name, None)
        config = backend.config
        with self._lock:
            if not self._closed:
                self._standby[name] = (spec, config)
        backend.close()
        self.events.unloaded.emit(name)

    def close(self, name: str) -> None:
        """Stop an added backend (its runs end "cancelled", still reported) and forget it, or forget a local
        model on standby."""
        with self._lock:
            entry = self._open.pop(name, None)
            if name != MAIN:
                self._standby.pop(name, None)
        if entry:
            entry[1].close()
            if entry[0].kind == "local":
                self.events.unloaded.emit(name)

    def close_all(self) -> None:
        """Close every backend, the main one included (on quit); nothing can be loaded afterwards."""
        with self._lock:
            self._closed = True
            self._standby.clear()
        for name in self.names():
            self.close(name)
        old = self.set_main(None)
        if old is not None:
            old.close()


def list_server_models(url: str, api_key: str | None = None) -> list[str]:
    """What a server serves (GET /v1/models), for a "test connection" button; raises ConnectionError."""
    probe = OpenAIBackend(url, api_key=api_key, max_concurrency=1)
    try:
        return probe.list_models()
    finally:
        probe.close()


__all__ = ["KINDS", "MAIN", "BackendRegistry", "BackendSpec", "RegistryEvents", "list_server_models"]
