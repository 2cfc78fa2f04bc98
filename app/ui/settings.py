"""Every persisted setting, declared once with its type and default (QSettings underneath).

Widgets read and write through `Settings`, never through raw QSettings keys, so a key is spelled in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from app.engine import default_threads

ORGANIZATION = "Chorus"
APPLICATION = "Chorus"


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    type: type


SLOTS = Setting("engine/slots", 4, int)
CONTEXT_PER_SLOT = Setting("engine/context_per_slot", 2048, int)
THREADS = Setting("engine/threads", default_threads(), int)
LAST_MODEL = Setting("model/last_path", "", str)
GEOMETRY = Setting("window/geometry", QByteArray(), QByteArray)
WINDOW_STATE = Setting("window/state", QByteArray(), QByteArray)
COLUMNS = Setting("window/columns", 2, int)

ALL = (SLOTS, CONTEXT_PER_SLOT, THREADS, LAST_MODEL, GEOMETRY, WINDOW_STATE, COLUMNS)
LIMITS = {SLOTS.key: (1, 16), CONTEXT_PER_SLOT.key: (256, 32768), THREADS.key: (1, 64), COLUMNS.key: (1, 4)}


class Settings:
    """Typed access to QSettings. Pass a QSettings (e.g. an INI file in a temp dir) to isolate tests."""

    def __init__(self, store: QSettings | None = None):
        self.store = store if store is not None else QSettings(ORGANIZATION, APPLICATION)

    def get(self, setting: Setting) -> Any:
        value = self.store.value(setting.key, setting.default)
        try:
            value = setting.type(value) if not isinstance(value, setting.type) else value
        except (TypeError, ValueError):
            return setting.default  # a hand-edited or stale value must not break start-up
        if setting.key in LIMITS:
            low, high = LIMITS[setting.key]
            value = min(max(value, low), high)
        return value

    def set(self, setting: Setting, value: Any) -> None:
        self.store.setValue(setting.key, value)

    def sync(self) -> None:
        self.store.sync()
