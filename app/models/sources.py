"""Where other apps keep their GGUF files, per platform — each layout checked against that app's own code:

- LM Studio: `<home>/models/<publisher>/<model>/<file>.gguf` (lmstudio.ai/docs/advanced/sideload). The home is
  the path in `~/.lmstudio-home-pointer` if that file exists, else `~/.cache/lm-studio` if it exists, else
  `~/.lmstudio` (lmstudio-ai/lmstudio-js, packages/lms-common-server/src/findLMStudioHome.ts).
- Ollama: `$OLLAMA_MODELS`, else `~/.ollama/models` (ollama/ollama envconfig.Models); the Linux service's
  `/usr/share/ollama/.ollama/models` (its install.sh makes that the `ollama` user's home). Inside,
  `manifests/<registry>/<namespace>/<model>/<tag>` and `blobs/sha256-<hex>` (server/modelpath.go).
- GPT4All: its `modelPath` setting, else QStandardPaths' AppLocalDataLocation `nomic.ai/GPT4All`
  (gpt4all-chat/src/mysettings.cpp, defaultLocalModelsPath). Settings are a Qt INI file (QSettings::IniFormat,
  organisation "nomic.ai", application "GPT4All": `~/.config/nomic.ai/GPT4All.ini`, key `modelPath` in
  [General]). Partial downloads are `incomplete-<file>` beside the models (modellist.cpp incompleteDownloadPath).
- Hugging Face hub cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
  `~/.cache/huggingface/hub` (huggingface_hub.constants).
- llama.cpp: `$LLAMA_CACHE`, else `~/Library/Caches/llama.cpp` (macOS), `%LOCALAPPDATA%/llama.cpp` (Windows),
  `$XDG_CACHE_HOME/llama.cpp` or `~/.cache/llama.cpp` (common/common.cpp fs_get_cache_directory): flat files
  named after the URL (`-mu`) or `<repo>_<tag>.gguf` (docker), `.downloadInProgress` while partial
  (common/download.cpp). `-hf` downloads use the hub cache's layout, in `$LLAMA_CACHE` when that is set, else
  in the hub cache itself (common/hf-cache.cpp).
- Jan: `<data folder>/llamacpp/models/<id>/model.yml`, whose `model_path` is absolute or relative to the data
  folder (janhq/jan extensions/llamacpp-extension). The data folder is `data_folder` in
  `<data dir>/jan.ai.app/settings.json` if set, else `<data dir>/Jan/data` (src-tauri default_data_folder_path).
"""

from __future__ import annotations

import configparser
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

OLLAMA_SYSTEM = Path("/usr/share/ollama/.ollama/models")
SOURCES = ("chorus", "lmstudio", "ollama", "gpt4all", "huggingface", "llama.cpp", "jan", "folder")
# "chorus": a model Chorus itself has (the embedded default, the model loaded now) that no app's folder lists
SOURCE_LABELS = {"chorus": "Chorus", "lmstudio": "LM Studio", "ollama": "Ollama", "gpt4all": "GPT4All",
                 "huggingface": "Hugging Face", "llama.cpp": "llama.cpp", "jan": "Jan", "folder": "Folder"}


@dataclass(frozen=True)
class Root:
    """A folder to scan and how it is laid out (`kind`: tree, ollama, hf, llamacpp, jan)."""

    source: str
    path: Path
    kind: str


def candidates(home: Path, env: dict, platform: str = sys.platform, folders=()) -> list[Root]:
    """Every folder where an app (or the user, `folders`) would keep models, whether it exists or not, in source
    order; a folder reached twice is listed once. What the Models dialog says it looked in."""
    found, seen = [], set()
    every = (_lmstudio(home, env) + _ollama(home, env, platform) + _gpt4all(home, env, platform)
             + [Root("huggingface", hf_cache_dir(home, env), "hf")] + _llamacpp(home, env, platform)
             + _jan(home, env, platform) + [Root("folder", Path(f).expanduser(), "tree") for f in folders])
    for root in every:
        key = (root.source, os.path.realpath(root.path))
        if key not in seen:
            seen.add(key)
            found.append(root)
    return found


def roots(home: Path, env: dict, platform: str = sys.platform, folders=()) -> list[Root]:
    """The `candidates` that exist: every folder worth scanning."""
    return [root for root in candidates(home, env, platform, folders) if root.path.is_dir()]


def _xdg(env: dict, name: str, home: Path, default: str) -> Path:
    value = env.get(name)
    return Path(value) if value else home / default


def _lmstudio(home: Path, env: dict) -> list[Root]:
    return [Root("lmstudio", h / "models", "tree") for h in lmstudio_homes(home)]


def lmstudio_homes(home: Path) -> list[Path]:
    """LM Studio's home folders, most likely first: the pointer file's, then the two defaults."""
    homes = []
    pointer = home / ".lmstudio-home-pointer"
    try:
        text = pointer.read_text(encoding="utf-8").strip()
        if text:
            homes.append(Path(text).expanduser())
    except OSError:
        pass
    return homes + [home / ".cache" / "lm-studio", home / ".lmstudio"]


def _ollama(home: Path, env: dict, platform: str) -> list[Root]:
    folders = [Path(env["OLLAMA_MODELS"])] if env.get("OLLAMA_MODELS") else []
    folders.append(home / ".ollama" / "models")
    if platform.startswith("linux"):
        folders.append(OLLAMA_SYSTEM)
    return [Root("ollama", f, "ollama") for f in folders]


def _data_dir(home: Path, env: dict, platform: str) -> Path:
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform.startswith("win"):
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    return _xdg(env, "XDG_DATA_HOME", home, ".local/share")


def _gpt4all(home: Path, env: dict, platform: str) -> list[Root]:
    if platform.startswith("win"):
        ini = Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "nomic.ai" / "GPT4All.ini"
        data = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local") / "nomic.ai" / "GPT4All"
    else:
        ini = _xdg(env, "XDG_CONFIG_HOME", home, ".config") / "nomic.ai" / "GPT4All.ini"
        data = _data_dir(home, env, platform) / "nomic.ai" / "GPT4All"
    folders = [p for p in [gpt4all_model_path(ini)] if p] + [data]
    return [Root("gpt4all", f, "tree") for f in folders]


def gpt4all_model_path(ini: Path) -> Path | None:
    """GPT4All's `modelPath` setting from its QSettings INI file, or None (absent, unreadable)."""
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # QSettings keys are case-sensitive
    try:
        parser.read(ini, encoding="utf-8")
        value = parser.get("General", "modelPath", fallback="").strip()
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    if len(value) >= 2 and value[0] == value[-1] == '"':  # QSettings quotes values with commas or spaces
        value = value[1:-1]
    value = value.replace("\\\\", "\\")
    return Path(value).expanduser() if value else None


def hf_cache_dir(home: Path, env: dict) -> Path:
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return Path(env[name]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return _xdg(env, "XDG_CACHE_HOME", home, ".cache") / "huggingface" / "hub"


def _llamacpp(home: Path, env: dict, platform: str) -> list[Root]:
    if env.get("LLAMA_CACHE"):
        return [Root("llama.cpp", Path(env["LLAMA_CACHE"]).expanduser(), "llamacpp")]
    if platform == "darwin":
        return [Root("llama.cpp", home / "Library" / "Caches" / "llama.cpp", "llamacpp")]
    if platform.startswith("win"):
        return [Root("llama.cpp", Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local") / "llama.cpp",
                     "llamacpp")]
    return [Root("llama.cpp", _xdg(env, "XDG_CACHE_HOME", home, ".cache") / "llama.cpp", "llamacpp")]


def _jan(home: Path, env: dict, platform: str) -> list[Root]:
    data_dir = _data_dir(home, env, platform)
    folder = data_dir / "Jan" / "data"
    try:
        configured = json.loads((data_dir / "jan.ai.app" / "settings.json").read_text(encoding="utf-8"))
        if isinstance(configured, dict) and configured.get("data_folder"):
            folder = Path(configured["data_folder"]).expanduser()
    except (OSError, ValueError):
        pass
    return [Root("jan", folder, "jan")]
