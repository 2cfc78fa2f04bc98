"""Every persisted setting, declared once with its type and default (QSettings underneath).

Widgets read and write through `Settings`, never through raw QSettings keys, so a key is spelled in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from app.backends.embedding import DEFAULT_EMBEDDER
from app.backends.registry import BackendSpec
from app.engine import limits
from app.engine.limits import Limit
from app.session import stability

ORGANIZATION = "Chorus"
APPLICATION = "Chorus"


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    type: type
    limit: Limit | None = None  # numbers are clamped into it on read

    @property
    def range(self) -> tuple[int, int]:
        return int(self.limit.low), int(self.limit.high)


SLOTS = Setting("engine/slots", limits.SLOTS.default, int, limits.SLOTS)
CONTEXT_PER_SLOT = Setting("engine/context_per_slot", limits.CONTEXT_PER_SLOT.default, int, limits.CONTEXT_PER_SLOT)
THREADS = Setting("engine/threads", limits.THREADS.default, int, limits.THREADS)
REPRODUCIBLE = Setting("engine/reproducible", limits.REPRODUCIBLE_DEFAULT, bool)
# How a new prompt shares steps with running panes: one of limits.PACING ("smooth" ... "fast")
PACING = Setting("engine/pacing", limits.PACING_DEFAULT, str)
LAST_MODEL = Setting("model/last_path", "", str)
CHAT_FORMATS = Setting("model/chat_formats", "{}", str)  # JSON {model path: chat format} for overrides
TOOL_FORMATS = Setting("model/tool_formats", "{}", str)  # JSON {model path: tool format} for overrides
GEOMETRY = Setting("window/geometry", QByteArray(), QByteArray)
WINDOW_STATE = Setting("window/state", QByteArray(), QByteArray)
THEME = Setting("window/theme", "system", str)  # "system", "light" or "dark" (app.ui.theme.THEMES)
RECENT_SESSIONS = Setting("session/recent", "[]", str)  # JSON list of paths, newest first
RECENT_LIMIT = 8
BACKENDS = Setting("backends/list", "[]", str)  # JSON list of BackendSpec dicts (never an API key)
# --- models and memory ---
KV_TYPE = Setting("engine/kv_type", limits.KV_TYPE_DEFAULT, str)  # one of limits.KV_TYPES
GPU_LAYERS = Setting("engine/gpu_layers", str(limits.GPU_LAYERS_DEFAULT), str)  # "auto", "all", "none" or N
MODEL_FOLDERS = Setting("models/folders", "[]", str)  # JSON list of folders the Models dialog also scans
EVAL_JUDGE = Setting("evaluation/judge", "local", str)  # the judge last picked: "local", a GGUF path or a URL
# --- meaning: the embedder ("local" = the main model, a GGUF path or a server URL), the cluster distance
EMBEDDER = Setting("meaning/embedder", DEFAULT_EMBEDDER, str)
CLUSTER_DISTANCE = Setting("meaning/cluster_distance", stability.CLUSTER_DISTANCE.default, float,
                           stability.CLUSTER_DISTANCE)


def gpu_layers_value(text: str):
    """The stored GPU-layers choice as EngineConfig.n_gpu_layers: "auto", -1 (all), 0 (none) or N layers."""
    text = str(text).strip().lower()
    if text in ("all", "-1"):
        return -1
    if text == "none":
        return 0
    if text.isdigit():
        return int(limits.GPU_LAYERS.clamp(int(text)))
    return limits.GPU_LAYERS_AUTO


class Settings:
    """Typed access to QSettings. Pass a QSettings (e.g. an INI file in a temp dir) to isolate tests."""

    def __init__(self, store: QSettings | None = None):
        self.store = store if store is not None else QSettings(ORGANIZATION, APPLICATION)

    def get(self, setting: Setting) -> Any:
        value = self.store.value(setting.key, setting.default)
        try:
            if setting.type is bool and isinstance(value, str):  # INI files store "true" / "false"
                value = {"true": True, "1": True, "false": False, "0": False}[value.strip().lower()]
            value = setting.type(value) if not isinstance(value, setting.type) else value
        except (TypeError, ValueError, KeyError):
            return setting.default  # a hand-edited or stale value must not break start-up
        if setting.limit is not None:
            value = setting.limit.clamp(value)
        return value

    def set(self, setting: Setting, value: Any) -> None:
        self.store.setValue(setting.key, value)

    def chat_format(self, model_path: str) -> str:
        """The prompt format chosen for this model file ("auto" unless the user picked one)."""
        return self._chat_formats().get(model_path, "auto")

    def set_chat_format(self, model_path: str, name: str) -> None:
        self._set_override(CHAT_FORMATS, model_path, name)

    def tool_format(self, model_path: str) -> str:
        """How this model file is offered tools ("auto" unless the user picked "template" or "generic")."""
        return self._chat_formats(TOOL_FORMATS).get(model_path, "auto")

    def set_tool_format(self, model_path: str, name: str) -> None:
        self._set_override(TOOL_FORMATS, model_path, name)

    def _set_override(self, setting: Setting, model_path: str, name: str) -> None:
        formats = self._chat_formats(setting)
        formats.pop(model_path, None) if name == "auto" else formats.update({model_path: name})
        self.set(setting, json.dumps(formats))

    def _chat_formats(self, setting: Setting = CHAT_FORMATS) -> dict:
        try:
            formats = json.loads(self.get(setting))
        except ValueError:
            return {}
        return formats if isinstance(formats, dict) else {}

    def recent_sessions(self) -> list[str]:
        try:
            paths = json.loads(self.get(RECENT_SESSIONS))
        except ValueError:
            return []
        return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []

    def add_recent_session(self, path: str) -> None:
        paths = [path] + [p for p in self.recent_sessions() if p != path]
        self.set(RECENT_SESSIONS, json.dumps(paths[:RECENT_LIMIT]))

    def engine_fields(self) -> dict:
        """EngineConfig fields every local model is loaded with (Settings dialog)."""
        kv_type = self.get(KV_TYPE)
        pacing = limits.PACING.get(self.get(PACING), limits.PACING[limits.PACING_DEFAULT])
        return {"n_slots": self.get(SLOTS), "n_ctx_per_slot": self.get(CONTEXT_PER_SLOT),
                "n_threads": self.get(THREADS), "reproducible": self.get(REPRODUCIBLE), "mixed_step_factor": pacing,
                "kv_type": kv_type if kv_type in limits.KV_TYPES else limits.KV_TYPE_DEFAULT,
                "n_gpu_layers": gpu_layers_value(self.get(GPU_LAYERS))}

    def model_folders(self) -> list[str]:
        """Folders the user added to the Models dialog's scan."""
        try:
            folders = json.loads(self.get(MODEL_FOLDERS))
        except ValueError:
            return []
        return [f for f in folders if isinstance(f, str)] if isinstance(folders, list) else []

    def set_model_folders(self, folders: list[str]) -> None:
        self.set(MODEL_FOLDERS, json.dumps(list(dict.fromkeys(folders))))

    def backend_specs(self) -> list[BackendSpec]:
        """The added backends, in order; an entry this version cannot read is skipped."""
        try:
            entries = json.loads(self.get(BACKENDS))
        except ValueError:
            return []
        specs = []
        for entry in entries if isinstance(entries, list) else []:
            try:
                specs.append(BackendSpec.from_dict(entry))
            except ValueError:
                continue
        return specs

    def set_backend_specs(self, specs: list[BackendSpec]) -> None:
        self.set(BACKENDS, json.dumps([spec.to_dict() for spec in specs]))

    def sync(self) -> None:
        self.store.sync()
