"""StandbyModels: the part of BackendRegistry that keeps local models on standby, known by name but not loaded.

A model on standby is offered to panes (`BackendRegistry.offered`) and loads with the engine settings it was
given (`load`); `unload` closes a loaded local model, the main one included, and keeps it on standby with its
settings. A name is never both loaded and on standby, and a model being loaded is loaded once. Every method
takes the registry's lock for its state and emits `events.loaded` / `events.unloaded` outside it. A mixin: its
state (`_lock`, `_standby`, `_loading`, `_main`, `_open`, `_closed`) and the methods it calls (`_register`,
`_check_new`, `get`, `set_main`) are BackendRegistry's. Qt-free; thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.backends.base import Backend
from app.backends.local import LocalBackend
from app.backends.spec import MAIN, BackendSpec
from app.engine import EngineConfig, StepEvent


class StandbyModels:
    _lock: threading.Lock
    _standby: dict[str, tuple[BackendSpec, EngineConfig]]  # local models known but not loaded
    _loading: set[str]
    _main: Backend | None
    _open: dict[str, tuple[BackendSpec, Backend, Callable[[], None]]]
    _closed: bool
    _on_step: Callable[[StepEvent], None]

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
