"""`bench --quant` on the real model, one small workload: both tools run, in alternating pairs, and the figures
and table come out (needs llama-perplexity and llama-quantize: `make llama-server`)."""

import pytest

from app.bench import llama_tools
from app.bench.quant import format_quant, quant_bench
from tests.conftest import TEST_THREADS

pytestmark = pytest.mark.servers


def test_quant_bench_pairs_a_small_text(model_path):
    if llama_tools.missing_tools("llama-perplexity", "llama-quantize"):
        pytest.skip("llama-perplexity or llama-quantize not built: run `make llama-server`")
    labels = []
    result = quant_bench(model_path, threads=TEST_THREADS, repetitions=2, ctx=64, chunks=4, on_run=labels.append)
    assert labels[:2] == ["quant kld ours 1/2", "quant kld theirs 1/2"]
    assert labels[4:6] == ["quant kld theirs 2/2", "quant kld ours 2/2"]  # the order alternates
    assert len(result["kld"]["pairs"]) == 2 and result["kld"]["median"] > 0
    assert len(result["perplexity"]["pairs"]) == 2 and result["chunks"] >= 4 and result["tokens"] >= 256
    assert "KLD pass ÷ llama-perplexity" in format_quant(result)
