"""KV cache types and GPU offload settings on the real engine, and the memory estimate against what llama.cpp
itself reports when it loads: llama_model_size for the weights, its log for the KV cache and compute buffers."""

from __future__ import annotations

import logging
import re

import llama_cpp
import pytest

from app.engine import Engine, EngineConfig
from app.engine.devices import CPU_BUILD, gpu_offload_supported
from app.models import estimate_memory
from tests.conftest import ask

MIB = 1024 * 1024



def llama_reported(caplog, config: EngineConfig) -> dict:
    """Load `config` and read back llama.cpp's own figures (bytes)."""
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="chorus.llama"), Engine(config) as engine:
        weights = llama_cpp.llama_model_size(engine._model.ptr)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == "chorus.llama")
    mib = lambda pattern: sum(float(m) for m in re.findall(pattern, text)) * MIB  # noqa: E731
    kv = mib(r"llama_kv_cache: size = +([\d.]+) MiB")
    compute = mib(r"compute buffer size = +([\d.]+) MiB") + mib(r"output buffer size = +([\d.]+) MiB")
    assert kv > 0 and compute > 0, text[-2000:]
    return {"weights": weights, "kv": kv, "compute": compute, "total": weights + kv + compute}


@pytest.mark.parametrize("model, n_slots, n_ctx, kv_type", [
    ("smol", 4, 2048, "f16"), ("smol", 8, 1024, "q8_0"), ("gemma", 1, 512, "f16"), ("gemma", 4, 2048, "q4_0")])
def test_the_memory_estimate_is_within_10_percent_of_llama_cpp_s_own_figures(model, n_slots, n_ctx, kv_type,
                                                                            model_path, gemma, caplog):
    path = model_path if model == "smol" else gemma
    config = EngineConfig(model_path=path, n_slots=n_slots, n_ctx_per_slot=n_ctx, n_threads=2, kv_type=kv_type)
    actual = llama_reported(caplog, config)
    estimate = estimate_memory(path, n_slots, n_ctx, kv_type, n_ubatch=config.batch_capacity)
    assert estimate.weights == actual["weights"]  # the tensor table's bytes are llama_model_size exactly
    assert abs(estimate.kv - actual["kv"]) <= 0.10 * actual["kv"], (estimate, actual)
    assert abs(estimate.total - actual["total"]) <= 0.10 * actual["total"], (estimate, actual)


@pytest.mark.parametrize("kv_type", ["q8_0", "q4_0"])
def test_a_quantized_kv_cache_generates_and_mostly_agrees_with_f16(make_engine, kv_type):
    prompts = ["Name three fruits.", "What is the capital of France?", "Count from one to five."]
    reference = make_engine(n_slots=2)
    quantized = make_engine(n_slots=2, kv_type=kv_type)
    assert quantized.model_info.kv_type == kv_type
    for text in prompts:
        ref = reference.submit(ask(text, max_tokens=16)).result(timeout=120)
        out = quantized.submit(ask(text, max_tokens=16, logprobs=5)).result(timeout=120)
        assert out.finish_reason in ("stop", "length") and out.text.strip(), out
        # A quantized cache may change which candidate wins (q4_0 does, on some CPUs' kernels, from the first
        # token), not what the candidates are: the f16 cache's first token is among the quantized one's top 5.
        assert ref.token_ids[0] in [t for t, _, _ in out.token_logprobs[0].top], (text, ref.text, out.text)


def test_bad_kv_type_and_gpu_layers_are_refused_with_the_allowed_values(model_path):
    with pytest.raises(ValueError, match="kv_type must be one of f16, q8_0, q4_0"):
        EngineConfig(model_path=model_path, kv_type="q5_1")
    with pytest.raises(ValueError, match="n_gpu_layers"):
        EngineConfig(model_path=model_path, n_gpu_layers="most")
    with pytest.raises(ValueError, match="n_gpu_layers must be in"):
        EngineConfig(model_path=model_path, n_gpu_layers=-2)
    for ok in ("auto", None, -1, 0, 12):
        assert EngineConfig(model_path=model_path, n_gpu_layers=ok).n_gpu_layers == ok


@pytest.mark.skipif(gpu_offload_supported(), reason="a CPU-only check: this llama.cpp build has a GPU backend")
@pytest.mark.parametrize("asked", ["auto", -1, 7])
def test_a_cpu_build_says_so_and_offloads_nothing_whatever_is_asked(make_engine, asked):
    engine = make_engine(n_gpu_layers=asked)
    assert engine.offload.layers == 0 and not engine.offload.on_gpu
    assert engine.model_info.offload == f"CPU ({CPU_BUILD})"
    assert engine.stats().gpu_layers == 0  # the reproducible readout stays "measured" (CPU)
    assert engine.submit(ask("Hi", max_tokens=4)).result(timeout=60).finish_reason in ("stop", "length")


def test_the_memory_estimate_counts_a_paired_audio_projector(model_path):
    from app.engine.devices import fit_check
    from tests.fixtures.audio_gguf import tiny_audio_mmproj

    projector = tiny_audio_mmproj()
    alone = estimate_memory(model_path, 2, 512)
    paired = estimate_memory(model_path, 2, 512, projector=projector)
    assert paired.projector == projector.stat().st_size and paired.total == alone.total + paired.projector
    assert paired.describe().endswith("+ projector 1)")
    config = EngineConfig(model_path=str(model_path), mmproj=str(projector), n_slots=2, n_ctx_per_slot=512)
    same = estimate_memory(model_path, 2, 512, n_ubatch=config.batch_capacity, projector=projector)
    assert fit_check(config).ram_needed == same.total  # the load's check counts it too (CPU: all in RAM)
