"""LoRA adapters on the loaded model: loaded once per file, applied to the context one set per llama_decode.

Engine thread only (it is the only one that calls llama.cpp). A file is loaded the first time a request names
it and stays loaded until the engine closes; a file llama.cpp refuses (not an adapter, another architecture, a
tensor of the wrong shape, such as another vocabulary's embeddings) raises `AdapterError` with llama.cpp's reason
and the file's name: that request ends with the message, the model and every other request go on.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import llama_cpp

from app.engine.native import LlamaModel, capture_log
from app.engine.request_options import LoraAdapter
from app.models.gguf_header import GGUFError, read_header


class AdapterError(ValueError):
    """A LoRA adapter file that cannot be applied to this model; the message names the file and why."""


def _adapter_arch(path: Path) -> str | None:
    """general.architecture of a GGUF file, or None when it cannot be read (llama.cpp then says why)."""
    try:
        value = read_header(path).get("general.architecture")
    except (OSError, GGUFError):
        return None
    return None if value is None else str(value)


class LoraAdapters:
    """The adapters loaded on one model, and the set the context currently applies."""

    def __init__(self, model: LlamaModel):
        self._model = model
        self._loaded: dict[str, object] = {}  # absolute path -> llama_adapter_lora pointer (ctypes)
        self._applied: tuple = ()  # the lora_key the context was last given

    def load(self, adapters: tuple[LoraAdapter, ...]) -> None:
        """Load every file of `adapters` not loaded yet; raises AdapterError for the first that fails."""
        for adapter in adapters:
            if adapter.path not in self._loaded:
                self._loaded[adapter.path] = self._init(Path(adapter.path))

    def _init(self, path: Path):
        name = path.name
        if not path.is_file():
            raise AdapterError(f"LoRA adapter {name}: no such file ({path})")
        with capture_log() as lines:
            ptr = llama_cpp.llama_adapter_lora_init(self._model.ptr, str(path).encode())
        if ptr:
            return ptr
        said = [line.split("failed to apply lora adapter: ", 1)[-1] if "failed to apply lora adapter: " in line
                else line.split(": ", 1)[-1] for line in lines]
        said = [s.strip() for s in said if s.strip() and s.strip() != "failed to load lora adapter from file"]
        reason = "; ".join(dict.fromkeys(said)) or "see the log for llama.cpp's reason"
        if "arch mismatch" in reason:
            arch = _adapter_arch(path)
            reason = (f"it was made for {arch or 'another architecture'}, this model is "
                      f"{self._model.meta('general.architecture') or 'another'}")
        elif "incorrect shape" in reason:
            reason += "; the adapter was trained on another model (a different vocabulary or size)"
        raise AdapterError(f"LoRA adapter {name} cannot be applied to {self._model.path.name}: {reason}. "
                           "The model stays loaded; pick an adapter made for it.")

    def apply(self, ctx, key: tuple[tuple[str, float], ...]) -> None:
        """Make `key` (a GenerationRequest.lora_key) the set the next llama_decode uses; nothing if it already is.
        Every file in it was loaded at admission."""
        if key == self._applied:
            return
        n = len(key)
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * max(n, 1))(*[self._loaded[path] for path, _ in key])
        scales = (ctypes.c_float * max(n, 1))(*[scale for _, scale in key])
        llama_cpp.llama_set_adapters_lora(ctx.ptr, adapters, n, scales)
        self._applied = key

    def close(self) -> None:
        """Free every adapter; call after the context is freed and before the model is."""
        for ptr in self._loaded.values():
            llama_cpp.llama_adapter_lora_free(ptr)
        self._loaded.clear()
        self._applied = ()
