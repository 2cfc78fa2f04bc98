"""Reproducible mode without placeholders: a stream alone in its ubatch, on ggml's per-row CPU kernels
(app/engine/reproducible/row_kernels.py), decodes one token per step with no placeholder neighbour and gives the
tokens it gets beside other streams, at KV lengths where flash attention's split-KV path would otherwise take over."""

import ctypes

from app.engine import GenerationRequest, SamplingParams
from app.engine.reproducible import row_kernels
from tests.conftest import assert_kv_accounted

PASSAGE = ("The river bends twice before it reaches the old mill at the edge of town. Every spring the orchard "
           "fills with bees and the farmers count the blossoms. A lighthouse keeper writes down the colour of the "
           "sea each morning. ")


def request(text: str, max_tokens: int = 24) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": text}], max_tokens=max_tokens,
                             sampling=SamplingParams(temperature=0.0))


def test_the_cpu_device_table_is_restored_after_making_a_context():
    """`reference_kernels` swaps the CPU device's init_backend entry only for its block."""
    assert row_kernels.available()
    device, _ = row_kernels._symbols()
    entry = ctypes.c_void_p.from_address(device + row_kernels._INIT_BACKEND * ctypes.sizeof(ctypes.c_void_p))
    before = entry.value
    with row_kernels.reference_kernels():
        assert entry.value != before
    assert entry.value == before


def test_smollm2_layer_matrices_are_row_invariant(model_path):
    """SmolLM2 135M Q4_1: every layer matrix Q4_1 (vec_dot row by row), norms F32 (its output matrix, Q8_0, is
    not a layer matrix)."""
    assert row_kernels.matrices_row_invariant(str(model_path))


def test_a_lone_stream_decodes_without_placeholders_and_matches_batched(make_engine):
    engine = make_engine(n_slots=4, reproducible=True, prompt_cache=False)
    long = request(PASSAGE * 6 + "\n\nRepeat the first sentence, then go on.")  # ~300 prompt tokens
    alone = engine.submit(long).result(timeout=600)
    assert alone.prompt_tokens > 256 and alone.generated_tokens == 24  # past the split-KV threshold
    assert engine.stats().placeholders == 0
    others = [request(f"Tell me something about the number {n}.", 40) for n in range(3)]
    handles = [engine.submit(long)] + [engine.submit(r) for r in others]
    together = [h.result(timeout=600) for h in handles]
    assert together[0].token_ids == alone.token_ids
    assert engine.stats().placeholders == 0
    assert_kv_accounted(engine)


def test_without_per_row_kernels_a_lone_stream_gets_placeholders(make_engine, monkeypatch):
    """The rule is conservative: a context on ggml's default kernels keeps the placeholders."""
    monkeypatch.setattr(row_kernels, "available", lambda: False)
    engine = make_engine(n_slots=4, reproducible=True, prompt_cache=False)
    result = engine.submit(request("Name three rivers.", 8)).result(timeout=600)
    assert result.generated_tokens >= 1
    assert engine.stats().placeholders >= result.generated_tokens - 1  # one beside every decode token
