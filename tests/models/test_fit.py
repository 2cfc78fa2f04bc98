"""The Qt-free fit checks: what a load needs where, how many layers "auto" offloads, and the KV types
it knows. Estimates come from the real model files' headers."""

from __future__ import annotations

import pytest

from app.models import estimate_memory
from app.models.fit import GIB, MIB, check, describe_auto, gpu_layers_that_fit
from app.models.memory import MemoryEstimate, kv_row_bytes

SETTINGS = {"n_slots": 4, "n_ctx_per_slot": 2048, "kv_type": "f16"}


def test_a_load_that_fits_passes_and_one_that_does_not_says_the_numbers(model_path):
    estimate = estimate_memory(model_path, 4, 2048)
    assert check(estimate, ram_free=estimate.total + 1).fits
    refused = check(estimate, ram_free=100 * MIB)
    assert not refused.fits and refused.ram_needed == estimate.total
    assert f"{estimate.total / MIB:,.0f} MiB of RAM, but 100 MiB is free" in refused.message
    assert "KV cache" in refused.message and "quantized KV cache" in refused.message


def test_offloaded_layers_move_their_weights_and_kv_to_the_gpu_side(model_path):
    estimate = estimate_memory(model_path, 4, 2048)
    n = len(estimate.per_layer)
    assert n == 30 and sum(estimate.per_layer) <= estimate.weights + estimate.kv
    half = check(estimate, ram_free=10 * GIB, gpu_free=10 * GIB, gpu_layers=10)
    assert half.fits and half.gpu_needed == sum(estimate.per_layer[-10:]) + estimate.compute
    assert half.ram_needed == estimate.total - sum(estimate.per_layer[-10:])
    full = check(estimate, ram_free=10 * GIB, gpu_free=50 * MIB, gpu_layers=-1, gpu_name="Apple M2")
    assert not full.fits and "on the Apple M2, but 50 MiB is free" in full.message


def test_auto_offloads_everything_that_fits_else_the_last_layers_that_do():
    layer = 100 * MIB
    estimate = MemoryEstimate(weights=30 * layer, kv=10 * layer, compute=5 * layer, per_layer=(4 * layer,) * 10)
    assert gpu_layers_that_fit(estimate, 64 * GIB) == -1
    # 2.5 GiB free, less 256 MiB headroom and the 500 MiB compute buffer: room for 4 layers of 400 MiB.
    assert gpu_layers_that_fit(estimate, int(2.5 * GIB)) == 4
    assert gpu_layers_that_fit(estimate, 300 * MIB) == 0
    assert describe_auto(4, 10, int(2.5 * GIB)) == "auto: 4 of 10 layers fit in 2.5 GiB free"


def test_an_unknown_kv_type_is_named():
    with pytest.raises(ValueError, match="unknown KV cache type 'q5'"):
        kv_row_bytes("q5", 64)
