"""The window's MCP link without a window, on real MCP servers (tests/fixtures/mcp_servers.py over stdio): a
session's server starts only after consent; a pane's calls wait for approval (the default), a denied call answers
the model with an error, an approved one runs once and the same call of another pane is replayed from the
recording; a server that crashes mid-call ends the call as an error and offers a restart."""

import json
import sys
import threading
import time

import pytest

from app.mcp import CRASHED, READY
from app.session import PaneSpec, Session, tool_loop
from app.session.mcp_link import ASKING, DENIED, DONE, ERROR, RUNNING, McpLink
from tests.fixtures import mcp_servers

WAIT_S = 60


def entry(kind, tmp_path, **files):
    args = [mcp_servers.HERE, kind] + [a for k, v in files.items() for a in (f"--{k}", str(tmp_path / v))]
    return {"command": sys.executable, "args": args}


class Pumped:
    """Runs `link.pump()` whenever the hub says something arrived, until a condition holds (no sleeps)."""

    def __init__(self):
        self.woken = threading.Event()
        self.link = None

    def notify(self):
        self.woken.set()

    def until(self, condition, timeout=WAIT_S):
        deadline = time.monotonic() + timeout
        while True:
            self.link.pump()
            if condition():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out waiting")
            self.woken.wait(min(left, 5))
            self.woken.clear()


def called(pane, city, call_id):
    calls = [{"id": call_id, "name": "lookup", "arguments": json.dumps({"city": city})}]
    pane.turns = [{"role": "user", "content": f"Weather in {city}?"},
                  {"role": "assistant", "content": "", "tool_calls": calls}]


@pytest.fixture
def linked(tmp_path):
    session = Session(panes=[PaneSpec(mcp=("counting",)) for _ in range(3)])
    session.mcp_servers = {"counting": entry("counting", tmp_path, count="count.txt", started="started.txt")}
    pumped = Pumped()
    link = McpLink(session, None, pumped.notify)
    pumped.link = link
    yield session, link, pumped
    link.close()


def test_calls_wait_for_approval_run_once_and_replay(linked, tmp_path):
    session, link, pumped = linked
    assert [c.name for c in link.needs_consent()] == ["counting"]
    assert "mcp_servers.py counting" in link.needs_consent()[0].launch
    with pytest.raises(PermissionError):
        link.start("counting")
    assert not (tmp_path / "started.txt").exists()
    link.consent()
    pumped.until(lambda: link.state("counting").status == READY)
    assert (tmp_path / "started.txt").exists() and not link.needs_consent()
    first, second, third = session.panes
    assert [d["function"]["name"] for d in link.definitions(first)] == ["lookup", "peek"]
    for pane, call_id in ((first, "a"), (second, "b"), (third, "c")):
        called(pane, "Paris", call_id)
        assert link.start_calls(pane) == 1
    assert link.calls[first.id]["a"].status == ASKING  # the default mode asks
    with pytest.raises(tool_loop.Waiting):
        tool_loop.answer_turns(first, servers=link.answers(first))
    link.deny(third, "c")
    assert link.calls[third.id]["c"].status == DENIED
    link.approve(first, "a")
    assert link.calls[first.id]["a"].status == RUNNING
    pumped.until(lambda: link.calls[first.id]["a"].status == DONE)
    link.approve(second, "b")
    pumped.until(lambda: link.calls[second.id]["b"].status == DONE)
    assert link.calls[first.id]["a"].content == "Sunny in Paris" and not link.calls[first.id]["a"].replayed
    assert link.calls[second.id]["b"].replayed and link.calls[second.id]["b"].content == "Sunny in Paris"
    assert (tmp_path / "count.txt").read_text().splitlines() == ["Paris"]  # one real call
    assert [r.content for r in session.mcp_records] == ["Sunny in Paris"]  # saved with the session
    turns = tool_loop.answer_turns(second, servers=link.answers(second))
    assert turns == [{"role": "tool", "content": "Sunny in Paris", "tool_call_id": "b", "name": "lookup"}]
    denied = tool_loop.answer_turns(third, servers=link.answers(third))[0]["content"]
    assert "was not run: the user denied this call" in denied


def test_a_crash_mid_call_ends_it_as_an_error_and_a_restart_brings_it_back(tmp_path):
    session = Session(panes=[PaneSpec(mcp=("crashing",))])
    session.mcp_servers = {"crashing": entry("crashing", tmp_path)}
    pumped = Pumped()
    link = McpLink(session, None, pumped.notify)
    pumped.link = link
    try:
        link.consent()
        pumped.until(lambda: link.state("crashing").status == READY)
        link.set_mode("crashing", "always")
        pane = session.panes[0]
        pane.turns = [{"role": "user", "content": "crash"},
                      {"role": "assistant", "content": "", "tool_calls": [{"id": "x", "name": "crash",
                                                                           "arguments": "{}"}]}]
        link.start_calls(pane)
        pumped.until(lambda: not link.waiting(pane))
        state = link.calls[pane.id]["x"]
        assert state.status == ERROR and "crashing" in state.content
        pumped.until(lambda: link.state("crashing").status == CRASHED)
        assert "crashing on purpose" in link.state("crashing").stderr_tail
        link.start("crashing")  # Restart
        pumped.until(lambda: link.state("crashing").status == READY)
    finally:
        link.close()
