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
    assert result["whole_reply"]["pairs"][0] == pytest.approx(result["runs"][0]["waiters"]["decode_tps"]
                                                              / result["runs"][0]["alone"]["decode_tps"])
    for kind in ("alone", "waiters"):  # every decoding pane's tokens were stamped as they arrived
        assert result["runs"][0][kind]["stamped"] == mcp_wait.DECODING * 24
    assert "with ÷ without the waiters" in mcp_wait.format_mcp_wait(result)


def test_the_rate_during_the_wait_counts_tokens_between_the_last_first_token_and_the_wait_end(monkeypatch):
    monkeypatch.setattr(mcp_wait, "WAIT_S", 2.0)
    started = 100.0
    stamps = [[100.5, 101.0, 101.5, 102.0, 102.5],  # 2 tokens in the window (101.5, 102.0)
              [101.0, 101.2, 101.4, 103.0]]  # the last first token, at +1.0: the window is (+1.0, +2.0]
    assert mcp_wait.rate_during_wait(stamps, started) == pytest.approx((2 + 2) / 2 / 1.0)
    assert mcp_wait.rate_during_wait([[102.5], [101.0]], started) is None  # a first token after the wait
    assert mcp_wait.rate_during_wait([[101.0], []], started) is None  # a pane with no token at all
