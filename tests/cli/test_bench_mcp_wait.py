"""`bench --tools`'s MCP part on the real model and a real MCP server, few tokens: pairs alternate, every waiting
pane's call is answered by the server and its next turn runs, the figure is the decode rates' ratio."""

import pytest

from app.bench import mcp_wait
from tests.conftest import TEST_THREADS


def test_waiting_panes_beside_decoding_ones_make_pairs(model_path, monkeypatch):
    monkeypatch.setattr(mcp_wait, "DECODE_TOKENS", 24)
    monkeypatch.setattr(mcp_wait, "WAIT_S", 0.2)
    labels = []
    result = mcp_wait.mcp_wait_bench(model_path, threads=TEST_THREADS, repetitions=2, on_run=labels.append)
    assert labels == ["rep 1: alone", "rep 1: waiters", "rep 2: waiters", "rep 2: alone"]
    for run in result["runs"]:
        assert run["waiters"]["waiters_answered"] == mcp_wait.WAITING and run["alone"]["waiters_answered"] == 0
        assert run["waiters"]["tokens"] == run["alone"]["tokens"] == mcp_wait.DECODING * 24
    assert result["pairs"][0] == pytest.approx(result["runs"][0]["waiters"]["decode_tps"]
                                               / result["runs"][0]["alone"]["decode_tps"])
    assert "with ÷ without the waiters" in mcp_wait.format_mcp_wait(result)
