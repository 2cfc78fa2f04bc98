"""`bench --lora` on the real model with two random adapters, few tokens: pairs, equal tokens, table."""

import pytest

from app.bench import lora_rate
from tests.conftest import TEST_THREADS


def test_lora_bench_pairs_two_sets_one_set_and_base(model_path, tmp_path):
    labels = []
    result = lora_rate.lora_bench(model_path, tmp_path, threads=TEST_THREADS, repetitions=2, max_tokens=12,
                                  on_run=labels.append)
    assert labels == ["rep 1: base", "rep 1: 1 set", "rep 1: 2 sets",
                      "rep 2: 2 sets", "rep 2: 1 set", "rep 2: base"]  # order reversed every other repetition
    assert {p.name for p in tmp_path.iterdir()} == {"lora-a.gguf", "lora-b.gguf"}
    for run in result["runs"]:
        assert {run[case]["tokens"] for case in lora_rate.CASES} == {lora_rate.N * 12}  # ignore_eos: same tokens
    for key, (num, den) in {"two_sets_vs_one": ("2 sets", "1 set"), "one_set_vs_base": ("1 set", "base")}.items():
        figure = result[key]
        assert len(figure["pairs"]) == 2 and figure["median"] > 0
        assert figure["pairs"][1] == pytest.approx(result["runs"][1][num]["tps"] / result["runs"][1][den]["tps"])
    assert "2 adapter sets ÷ 1 set" in lora_rate.format_lora(result)
