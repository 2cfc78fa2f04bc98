"""BackendManager: the window's backends beyond the main model — adding, removing, remembering, reconnecting.

The added backends are saved in the settings (specs only; API keys go to the KeyStore) and reopened in the
background at start. One that cannot be opened then (a server that is down, a moved model file) stays in the
list as "not connected" with its reason, so nothing the user set up is forgotten; Reconnect tries again.

It opens and closes backends through the bridge (their lifecycle is the bridge's); views, such as the Backends
dialog, get the manager and read its `listing()`, never the bridge.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Signal

from app.backends import KeyStore
from app.backends.registry import MAIN, BackendSpec
from app.backends.shifts import room_for
from app.engine import EngineConfig
from app.models import model_name
from app.ui.bridge import EngineBridge
from app.ui.settings import Settings

log = logging.getLogger("chorus.ui.backends")


class BackendManager(QObject):
    sig_status = Signal(str)
    """A short note for the status bar (a backend connected, or why it could not)."""
    sig_changed = Signal()
    """The list of backends (connected or not) changed, or the main model loaded or unloaded."""

    def __init__(self, bridge: EngineBridge, settings: Settings, keys: KeyStore | None = None,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.bridge, self.settings = bridge, settings
        bridge.sig_backends_changed.connect(self.sig_changed)
        self.keys = keys if keys is not None else KeyStore()
        self.unavailable: dict[str, tuple[BackendSpec, str]] = {}  # saved but not open: name -> (spec, why)
        self.last_added: str | None = None

    def saved(self) -> list[BackendSpec]:
        registry = self.bridge.backends
        return registry.specs() + registry.standby_specs() + [spec for spec, _ in self.unavailable.values()]

    def listing(self) -> list[tuple[str, str, str, str]]:
        """(name, kind, where, status) for the main model, every open backend and every saved one not open."""
        registry, info = self.bridge.backends, self.bridge.model_info
        rows = [(MAIN, f"main local model: {model_name(info.path)}" if info else "main local model",
                 info.path if info else "–", "loaded" if info else "no model loaded")]
        if info is None and registry.on_standby(MAIN):
            rows[0] = (MAIN, "main local model", "–", "unloaded while other models run in shifts")
        for spec in registry.specs():
            status = "loaded" if spec.kind == "local" else "connected"
            rows.append((spec.name, spec.kind, spec.path or spec.url, status))
        for spec in registry.standby_specs():
            rows.append((spec.name, spec.kind, spec.path, "standby: loads when its panes run (in shifts when "
                                                          "models do not fit in memory together)"))
        for spec, reason in self.unavailable.values():
            rows.append((spec.name, spec.kind, spec.path or spec.url, f"not connected: {reason}"))
        return rows

    def _save(self) -> None:
        self.settings.set_backend_specs(self.saved())
        self.sig_changed.emit()

    async def add(self, spec: BackendSpec, api_key: str | None = None, remember: bool = False) -> str | None:
        """Open a backend and remember it; returns None, or why it could not be opened (nothing else changes,
        except that a saved backend that fails again keeps its place as "not connected"). `self.last_added`
        is the name it got (a server's default model resolved). A local model that does not fit in memory
        beside the models loaded waits on standby instead: it loads when its panes run, in shifts with others."""
        if spec.kind == "local" and not spec.problem() and spec.name not in self.bridge.backend_names():
            try:
                why = room_for(self.bridge.backends, EngineConfig(model_path=spec.path,
                                                                  **self.settings.engine_fields()))
            except (ValueError, OSError):  # settings the engine refuses: opening it says so
                why = None
            if why:
                return self._add_standby(spec, why)
        if api_key and spec.kind == "server":
            self.keys.set(spec.url, api_key, remember)
        key = api_key or (self.keys.get(spec.url) if spec.kind == "server" else None)
        try:
            opened = await self.bridge.add_backend(spec, api_key=key, engine=self.settings.engine_fields())
        except Exception as exc:  # the engine's or the server's own message: shown, never raised into Qt
            reason = str(exc) or type(exc).__name__
            log.warning("could not open %s: %s", spec.name, reason)
            if spec.name in self.unavailable:
                self.unavailable[spec.name] = (spec, reason)
                self.sig_changed.emit()
            self.sig_status.emit(f"Could not connect {spec.name}: {reason}")
            return reason
        self.unavailable.pop(spec.name, None)
        self.last_added = opened.name
        self._save()
        self.sig_status.emit(f"Connected {opened.name}")
        return None

    def _add_standby(self, spec: BackendSpec, why: str) -> str | None:
        try:
            self.bridge.add_standby(spec, engine=self.settings.engine_fields())
        except ValueError as exc:
            self.sig_status.emit(f"Could not add {spec.name}: {exc}")
            return str(exc)
        self.unavailable.pop(spec.name, None)
        self.last_added = spec.name
        self._save()
        self.sig_status.emit(f"{spec.name} is on standby ({why}): it loads when its panes run, one model at a "
                             "time when they do not fit together")
        return None

    async def remove(self, name: str) -> None:
        """Close a backend (its runs end "cancelled") or drop a saved one that is not connected."""
        if self.unavailable.pop(name, None) is None:
            await self.bridge.remove_backend(name)
        self._save()

    async def reconnect(self, name: str) -> str | None:
        entry = self.unavailable.get(name)
        return await self.add(entry[0]) if entry else None

    async def restore(self) -> None:
        """Reopen the saved backends, one after another (start-up; failures are listed, not raised)."""
        for spec in self.settings.backend_specs():
            if spec.name not in self.bridge.backend_names():
                self.unavailable[spec.name] = (spec, "connecting…")
        self.sig_changed.emit()
        for name in list(self.unavailable):
            if self.bridge.closed:  # the window closed meanwhile
                return
            await self.reconnect(name)
