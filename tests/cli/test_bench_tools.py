"""`bench --tools` on the real model (SmolLM2 with Qwen2.5's template), few tokens: pairs, token parity, table."""

import pytest

from app.bench import tool_rate
from app.bench.model_files import llama_cpp_templates
from tests.conftest import TEST_THREADS


def test_tools_bench_pairs_tool_panes_with_the_same_free_text_tokens(model_path, tmp_path):
    if tool_rate.TEMPLATE not in llama_cpp_templates():
        pytest.skip("llama.cpp's templates are not in the cache: run `make llama-source`")
    labels = []
    result = tool_rate.tools_bench(model_path, tmp_path, threads=TEST_THREADS, repetitions=2, max_tokens=60,
                                   on_run=labels.append)
    assert labels[1:] == ["rep 1: free", "rep 1: tool", "rep 2: tool", "rep 2: free"]  # order alternates
    assert len(result["pairs"]) == 2 and result["median"] > 0
    assert result["calls"] == tool_rate.N and result["first_call"]["name"] == "get_weather"  # constrained
    total = sum(result["tokens_per_request"])
    for run in result["runs"]:  # greedy tool panes repeat their counts; free text is held to them
        assert run["tool"]["tokens"] == run["free"]["tokens"] == total
    assert result["pairs"][0] == pytest.approx(result["runs"][0]["tool"]["tps"] / result["runs"][0]["free"]["tps"])
    assert result["parser_us_per_token"]["call"] > 0
    assert "Tool panes ÷ free text" in tool_rate.format_tools(result)
