"""Will it fit? Memory checks before a load and the layers "auto" offloads.

Qt-free and device-free: callers pass the free memory they measured (RAM from `available_ram()`, a GPU's from
app.engine.devices). Numbers come from app.models.memory's estimate.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

import psutil

from app.models.memory import MIB, MemoryEstimate

GIB = 1024 * MIB
HEADROOM = 256 * MIB  # "auto" offload leaves at least this (or 5%) of a GPU free for the driver and others
MEMORY_LIMIT_ENV = "CHORUS_MEMORY_LIMIT"  # e.g. "2G": the most RAM the models Chorus loads may take together
_UNITS = {"": 1, "k": 1024, "m": MIB, "g": GIB, "t": 1024 * GIB}
log = logging.getLogger("chorus.models")


def parse_size(text: str) -> int:
    """Bytes from "2G", "1.5GiB", "900 MB", "512m" or a plain number of bytes (binary units: 1K = 1024).
    Raises ValueError saying what it expected."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"{text!r} is not a size: give bytes or a number with K, M, G or T, e.g. 2G")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def memory_limit(env: dict | None = None) -> int | None:
    """`$CHORUS_MEMORY_LIMIT` in bytes: the most RAM the models Chorus loads may take together (None: no limit
    but the machine's). A value that is not a size is logged and ignored."""
    text = (os.environ if env is None else env).get(MEMORY_LIMIT_ENV, "").strip()
    if not text:
        return None
    try:
        return parse_size(text)
    except ValueError as exc:
        log.warning("%s ignored: %s", MEMORY_LIMIT_ENV, exc)
        return None


def available_ram(in_use: int = 0) -> int:
    """Bytes of RAM one more model can take without swapping: psutil's `available`, and with
    `$CHORUS_MEMORY_LIMIT` set, at most the limit less `in_use` (what the models already loaded, and staying
    loaded, take by their estimates). Every fit check, the hub's "fits best" and the sweep planner read free RAM
    here, so the limit makes all of them act as on a smaller machine."""
    free = int(psutil.virtual_memory().available)
    limit = memory_limit()
    return free if limit is None else max(0, min(free, limit - in_use))


def size_label(n: int) -> str:
    if n >= GIB:
        return f"{n / GIB:.1f} GiB"
    return f"{n / MIB:,.0f} MiB" if n >= MIB else f"{n / 1024:,.0f} KiB"


def _gpu_budget(free: int) -> int:
    return max(0, free - max(HEADROOM, free // 20))


def gpu_layers_that_fit(estimate: MemoryEstimate, gpu_free: int) -> int:
    """-1 (all, output included) when the whole model fits the GPU's free memory, else how many layers do:
    llama.cpp offloads the last N layers, each bringing its weights and its KV cache, and the compute buffer
    goes to the GPU as soon as one layer does."""
    budget = _gpu_budget(gpu_free)
    if estimate.total <= budget:
        return -1
    room, layers = budget - estimate.compute, 0
    for layer in reversed(estimate.per_layer):
        if layer > room:
            break
        room -= layer
        layers += 1
    return layers


def describe_auto(layers: int, n_layer: int, gpu_free: int) -> str:
    if layers < 0:
        return f"auto: every layer fits in {size_label(gpu_free)} free"
    if layers == 0:
        return f"auto: not one layer fits in {size_label(gpu_free)} free, so none is offloaded"
    return f"auto: {layers} of {n_layer} layers fit in {size_label(gpu_free)} free"


@dataclass(frozen=True)
class FitCheck:
    """Whether a load fits; `message` says what is needed where, with the numbers, when it does not."""

    fits: bool
    ram_needed: int
    ram_free: int
    gpu_needed: int = 0
    gpu_free: int = 0
    message: str = ""


def check(estimate: MemoryEstimate, ram_free: int, gpu_free: int | None = None, gpu_layers: int = 0,
          gpu_name: str = "GPU") -> FitCheck:
    """Split the estimate between RAM and the GPU as `gpu_layers` (-1 all, 0 none, N last layers) puts it, and
    compare each side with what is free."""
    n_layer = len(estimate.per_layer)
    on_gpu = n_layer if gpu_layers < 0 else min(gpu_layers, n_layer)
    gpu_needed = 0
    if gpu_free is not None and on_gpu > 0:
        gpu_needed = sum(estimate.per_layer[n_layer - on_gpu:]) + estimate.compute
    ram_needed = estimate.total - (gpu_needed - estimate.compute if gpu_needed else 0)
    problems = []
    if ram_needed > ram_free:
        problems.append(f"{size_label(ram_needed)} of RAM, but {size_label(ram_free)} is free")
    if gpu_needed > (gpu_free or 0):
        problems.append(f"{size_label(gpu_needed)} on the {gpu_name}, but {size_label(gpu_free or 0)} is free")
    message = ""
    if problems:
        message = ("This model at these settings needs " + " and ".join(problems) + f".\nEstimate: "
                   f"{estimate.describe()}.\nIt may swap (everything slows down) or fail to load. Fewer slots, a "
                   "smaller context per slot, a quantized KV cache or fewer GPU layers need less.")
    return FitCheck(not problems, ram_needed, ram_free, gpu_needed, gpu_free or 0, message)
