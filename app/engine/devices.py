"""The compute devices this llama.cpp build can use, and how many layers go to a GPU.

`llama_supports_gpu_offload()` says whether the build has a GPU backend (Metal, CUDA, Vulkan...). The devices
themselves come from ggml's backend registry (ggml-backend.h: ggml_backend_dev_count/get/name/description/
type/memory), which llama-cpp-python does not wrap: it is bound here with ctypes from the libggml shipped
next to libllama. Free RAM comes from app.models.fit (ggml's CPU device reports all memory as free).
"""

from __future__ import annotations

import ctypes
import logging
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import llama_cpp

from app.engine.types import EngineConfig
from app.models import fit
from app.models.memory import estimate_memory

log = logging.getLogger("chorus.engine")
_KINDS = {0: "CPU", 1: "GPU", 2: "iGPU", 3: "accelerator", 4: "meta"}
CPU_BUILD = "CPU build"


@dataclass(frozen=True)
class Device:
    name: str  # ggml's backend device name, e.g. "CUDA0", "Metal", "Vulkan0", "CPU"
    description: str  # e.g. "NVIDIA GeForce RTX 4090", "Apple M2"
    kind: str  # CPU, GPU, iGPU, accelerator
    free: int  # bytes
    total: int


@dataclass(frozen=True)
class Offload:
    """Where a loaded model's layers are: `layers` of `n_layer` on `device` (None: all on the CPU)."""

    layers: int
    n_layer: int
    device: Device | None
    note: str  # e.g. "CPU build", "auto: 20 of 28 layers fit in 6.1 GiB free"

    @property
    def on_gpu(self) -> bool:
        return self.device is not None and self.layers != 0

    def label(self) -> str:
        if not self.on_gpu:
            return f"CPU ({self.note})" if self.note else "CPU"
        shown = self.n_layer if self.layers < 0 or self.layers > self.n_layer else self.layers
        return f"{self.device.description or self.device.name}: {shown}/{self.n_layer} layers"


def gpu_offload_supported() -> bool:
    return bool(llama_cpp.llama_supports_gpu_offload())


@cache
def _ggml():
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    suffix = {"darwin": ".dylib", "win32": ".dll"}.get(sys.platform, ".so")
    names = ("libggml" + suffix, "ggml" + suffix)
    for name in names:
        if (lib_dir / name).exists():
            lib = ctypes.CDLL(str(lib_dir / name))
            break
    else:
        return None
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_get.restype = ctypes.c_void_p
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    for fn in (lib.ggml_backend_dev_name, lib.ggml_backend_dev_description):
        fn.restype, fn.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
    lib.ggml_backend_dev_type.restype, lib.ggml_backend_dev_type.argtypes = ctypes.c_int, [ctypes.c_void_p]
    lib.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                            ctypes.POINTER(ctypes.c_size_t)]
    return lib


def devices() -> list[Device]:
    """Every device ggml registered (the CPU last, as ggml lists it); [] if the library cannot be bound."""
    try:
        lib = _ggml()
    except (OSError, AttributeError) as exc:
        log.info("ggml's device registry is not reachable: %s", exc)
        return []
    if lib is None:
        return []
    llama_cpp.llama_backend_init()  # loads the backends (idempotent)
    found = []
    for i in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(i)
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        lib.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        kind = _KINDS.get(lib.ggml_backend_dev_type(dev), "?")
        if kind == "CPU":
            free = ctypes.c_size_t(fit.available_ram())
        found.append(Device((lib.ggml_backend_dev_name(dev) or b"").decode(),
                            (lib.ggml_backend_dev_description(dev) or b"").decode(), kind, free.value, total.value))
    return found


def gpu() -> Device | None:
    """The first GPU (or integrated GPU) device, where llama.cpp puts offloaded layers; None on a CPU build."""
    if not gpu_offload_supported():
        return None
    return next((d for d in devices() if d.kind in ("GPU", "iGPU")), None)


def resolve_gpu_layers(config: EngineConfig) -> Offload:
    """The n_gpu_layers llama.cpp gets for `config`, and why. A CPU build offloads nothing, whatever was asked;
    "auto" offloads every layer when the model and its KV cache fit the GPU's free memory, else as many layers
    as fit (app.models.fit.gpu_layers_that_fit)."""
    device = gpu()
    if device is None:
        return Offload(0, 0, None, CPU_BUILD if not gpu_offload_supported() else "no GPU device found")
    try:
        estimate = estimate_memory(config.model_path, config.n_slots, config.n_ctx_per_slot, config.kv_type,
                                   n_ubatch=config.batch_capacity)
    except (ValueError, OSError):  # the loader reports what is wrong with the file
        return Offload(-1, 0, device, "")
    n_layer, asked = len(estimate.per_layer), config.n_gpu_layers
    if asked is None:
        return Offload(-1, n_layer, device, "llama.cpp's default: every layer")
    if asked != "auto":
        return Offload(int(asked), n_layer, device, "set to none" if asked == 0 else "as set")
    layers = fit.gpu_layers_that_fit(estimate, device.free)
    return Offload(layers, n_layer, device, fit.describe_auto(layers, n_layer, device.free))


def fit_check(config: EngineConfig) -> fit.FitCheck:
    """Whether loading `config` fits the free RAM (and the GPU's free memory for the layers it would get).
    Raises ValueError for a file whose header cannot be read."""
    estimate = estimate_memory(config.model_path, config.n_slots, config.n_ctx_per_slot, config.kv_type,
                               n_ubatch=config.batch_capacity, projector=config.mmproj)
    offload = resolve_gpu_layers(config)
    device = offload.device if offload.on_gpu else None
    return fit.check(estimate, fit.available_ram(), device.free if device else None, offload.layers,
                     (device.description or device.name) if device else "GPU")
