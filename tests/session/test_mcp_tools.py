"""MCP tools in panes, on the embedded model and real MCP servers (tests/fixtures/mcp_servers.py): eight panes of
no group (run side by side, as Run all runs them) call the same counting tool with the same arguments; auto-continue
gives each a tool turn, and the tool runs once (replayed to the other seven), or eight times when the panes (here a
group) are live. A session naming a server opens
without starting it, and saves no secret."""

import json
import time

import pytest

from app.engine import SamplingParams
from app.mcp import ALWAYS, ApprovalPolicy
from app.session import PaneSpec, Session, SessionController, SessionModel, SessionRunner
from app.session.mcp_tools import McpTools
from tests.conftest import EngineSubmitter, drive
from tests.fixtures import mcp_servers as fx


def wait_for(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def smollm_engine(make_engine):
    return make_engine(n_slots=8)


def eight_panes(session, group, live):
    return [session.adopt(PaneSpec(turns=[{"role": "user", "content": "What is the weather in Paris?"}],
                                   tool_choice="required", mcp=("counter/lookup",), mcp_live=live, group=group,
                                   sampling=SamplingParams(temperature=0), max_tokens=48)) for _ in range(8)]


def test_eight_panes_one_real_call_replayed_then_eight_live(smollm_engine, tmp_path):
    count = tmp_path / "count.txt"
    session = SessionModel(mcp_servers={"counter": fx.command("counting", count)})
    runner = SessionRunner(EngineSubmitter(smollm_engine))
    smollm_engine.subscribe(runner.feed)
    controller = SessionController(session, runner)
    mcp = McpTools(session, policy=ApprovalPolicy(default=ALWAYS))
    try:
        assert [s.status for s in (f.result(60) for f in mcp.start())] == ["ready"]
        controller.use_mcp(mcp)
        for live, expected_calls in ((False, 1), (True, 9)):
            panes = eight_panes(session, "live" if live else None, live)  # ungrouped panes: Run all's replay group
            controller.run_many(panes)
            drive(runner)
            assert all(p.result.finish_reason == "tool_calls" for p in panes), [p.result.text for p in panes]
            loop = controller.auto_continue(panes, steps=1)
            wait_for(lambda loop=loop: all(a.done() for a in loop.waiting.values()))
            loop.poll()
            drive(runner)
            tool_turns = [t for p in panes for t in p.turns if t["role"] == "tool"]
            assert len(tool_turns) == 8 and all(t["content"].startswith("Sunny in") for t in tool_turns), tool_turns
            replayed = [t["mcp"]["replayed"] for t in tool_turns]
            assert replayed.count(False) == (8 if live else 1), replayed
            assert len(count.read_text().splitlines()) == expected_calls
        assert len(session.mcp_records) == 1 and session.mcp_records[0].tool == "lookup"
    finally:
        mcp.close()


def test_a_session_naming_a_server_opens_without_starting_it_and_keeps_no_secret(tmp_path):
    marker = tmp_path / "started.txt"
    entry = {"command": fx.sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').write('ran')"],
             "env": {"API_KEY": "sk-secret"}}
    session = Session(panes=[PaneSpec(title="A", mcp=("evil",))])
    session.mcp_servers = {"evil": entry, "web": {"url": "https://x.example/mcp", "headers": {"Authorization": "t"}}}
    path = tmp_path / "s.chorus.json"
    session.save(path)
    assert "sk-secret" not in path.read_text() and '"Authorization": ""' in path.read_text()
    opened = Session.load(path)
    controller = SessionController(SessionModel(), SessionRunner(EngineSubmitter(None)))
    controller.replace(opened)
    mcp = McpTools(controller.session)
    assert [name for name, _ in mcp.launches()] == ["evil", "web"]  # what the consent shows, nothing started
    assert "-c" in dict(mcp.launches())["evil"] and mcp.hub is None
    assert not marker.exists()
    assert json.loads(path.read_text())["panes"][0]["mcp"] == ["evil"]
