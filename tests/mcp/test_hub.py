"""The hub against real MCP servers the tests write with the SDK (tests/fixtures/mcp_servers.py), over stdio and
Streamable HTTP on 127.0.0.1: tools listed, calls answered, record and replay, and every failure as a result the
model sees, while the other servers carry on. No mock of the protocol."""

import threading
from contextlib import contextmanager

import pytest

from app.mcp import CRASHED, FAILED, READY, McpHub, ReplayStore, parse_config
from tests.fixtures import mcp_servers as fx


def hub_of(**entries) -> McpHub:
    return McpHub(parse_config({"mcpServers": entries}))


@contextmanager
def running(**entries):
    """A hub over these servers, every one started (their states given), closed at the end."""
    hub = hub_of(**entries)
    try:
        yield hub, {s.name: s for s in hub.start_all(timeout=60)}
    finally:
        hub.close()


@pytest.fixture
def counting(tmp_path):
    count = tmp_path / "count.txt"
    hub = hub_of(counter=fx.command("counting", count))
    yield hub, count
    hub.close()


def calls_in(count) -> list[str]:
    return count.read_text().splitlines() if count.exists() else []


def test_a_stdio_server_lists_its_tools_with_schemas_and_hints_and_answers_a_call(counting):
    hub, count = counting
    (state,) = hub.start_all(timeout=60)
    assert state.status == READY, state.message
    tools = {t.name: t for t in state.tools}
    assert set(tools) == {"lookup", "peek"}
    assert tools["lookup"].definition()["function"]["parameters"]["required"] == ["city"]
    assert tools["peek"].read_only and not tools["lookup"].read_only
    result = hub.call("counter", "lookup", '{"city": "Paris"}', call_id="c1").result(30)
    assert (result.content, result.is_error, result.replayed, result.call_id) == ("Sunny in Paris", False, False, "c1")
    assert calls_in(count) == ["Paris"]


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_streamable_http_and_sse_on_localhost(tmp_path, transport):
    count = tmp_path / "count.txt"
    server = fx.HttpServer("counting", count, transport)
    hub = hub_of(remote={"url": server.url})
    try:
        (state,) = hub.start_all(timeout=60)
        assert hub.config("remote").transport == transport
        assert state.status == READY, state.message
        assert "lookup" in [t.name for t in state.tools]
        assert hub.call("remote", "lookup", {"city": "Oslo"}).result(30).content == "Sunny in Oslo"
        assert calls_in(count) == ["Oslo"]
    finally:
        hub.close()
        server.close()


def test_replay_runs_one_call_for_eight_identical_ones_and_live_runs_all(counting):
    hub, count = counting
    hub.start_all(timeout=60)
    store = ReplayStore(hub)
    futures = [store.call("counter", "lookup", {"city": "Rome"}, f"r{i}") for i in range(8)]
    results = [f.result(30) for f in futures]  # sent together: seven wait on the first, none runs again
    assert [r.content for r in results] == ["Sunny in Rome"] * 8
    assert sum(not r.replayed for r in results) == 1 and [r.call_id for r in results] == [f"r{i}" for i in range(8)]
    assert calls_in(count) == ["Rome"]
    assert store.call("counter", "lookup", '{ "city":"Rome" }', "again").result(30).replayed  # canonical arguments
    live = ReplayStore(hub, live=True)
    assert not any(f.result(30).replayed for f in [live.call("counter", "lookup", {"city": "Rome"}) for _ in range(8)])
    assert calls_in(count) == ["Rome"] * 9


def test_recordings_replay_in_a_new_store_without_a_call(counting):
    hub, count = counting
    hub.start_all(timeout=60)
    first = ReplayStore(hub)
    first.call("counter", "lookup", {"city": "Lima"}).result(30)
    again = ReplayStore(hub, records=first.records())  # a reopened session's recordings
    assert again.call("counter", "lookup", {"city": "Lima"}, "x").result(30).replayed
    assert calls_in(count) == ["Lima"]


def test_a_slow_tool_times_out_and_other_servers_answer_meanwhile(tmp_path):
    with running(slow=fx.command("slow"), counter=fx.command("counting", tmp_path / "c.txt")) as (hub, _states):
        slow = hub.call("slow", "wait", {"seconds": 30}, timeout_s=2)
        quick = hub.call("counter", "lookup", {"city": "Bern"}).result(30)
        assert quick.content == "Sunny in Bern" and not slow.done()
        result = slow.result(30)
        assert result.is_error and "did not answer within 2 s" in result.content


def test_a_call_can_be_cancelled(tmp_path):
    with running(slow=fx.command("slow")) as (hub, _states):
        call = hub.call("slow", "wait", {"seconds": 30})
        assert call.cancel() or call.cancelled() or call.done()
        assert hub.call("slow", "wait", {"seconds": 0}).result(30).content == "waited 0.0 s"  # the server goes on


def test_a_crash_mid_call_ends_it_as_an_error_with_the_stderr_tail_and_a_restart_brings_it_back(tmp_path):
    with running(crasher=fx.command("crashing")) as (hub, _states):
        result = hub.call("crasher", "crash", {}).result(30)
        assert result.is_error and "stopped while running" in result.content
        assert "crashing on purpose" in result.content
        assert hub.state("crasher").status == CRASHED
        after = hub.call("crasher", "crash", {}).result(30)
        assert after.is_error and "stopped while running" in after.content  # no hang on a dead server
        assert hub.restart("crasher").result(60).status == READY


def test_a_server_that_fails_to_start_says_why_with_its_stderr_and_others_start(tmp_path):
    with running(broken=fx.command("broken"), missing={"command": str(tmp_path / "no-such-program")},
                 counter=fx.command("counting", tmp_path / "c.txt")) as (hub, states):
        assert states["broken"].status == FAILED and "failed to start" in states["broken"].message
        assert "missing API key" in states["broken"].stderr_tail
        assert states["missing"].status == FAILED and "not found" in states["missing"].message
        assert states["counter"].status == READY
        refused = hub.call("broken", "anything", {}).result(30)
        assert refused.is_error and "missing API key" in refused.content


def test_a_tool_error_is_an_error_result_the_model_sees(tmp_path):
    with running(failing=fx.command("failing")) as (hub, _states):
        result = hub.call("failing", "fail", {}).result(30)
        assert result.is_error and result.origin == "tool" and result.content
        missing = hub.call("failing", "no_such_tool", {}).result(30)
        assert missing.is_error


def test_a_malformed_message_does_not_hang_the_call(tmp_path):
    with running(garbler=fx.command("malformed")) as (hub, _states):
        result = hub.call("garbler", "garble", {}, timeout_s=2).result(30)
        assert result.is_error and "did not answer within 2 s" in result.content
        assert "it sent a malformed message: 'this is not JSON-RPC' is not JSON-RPC" in result.content


def test_the_tool_list_follows_the_server(tmp_path):
    hub = hub_of(changing=fx.command("changing"))
    changed = threading.Event()
    hub.changed.connect(lambda name: changed.set() if "secret" in [t.name for t in hub.state(name).tools] else None)
    try:
        (state,) = hub.start_all(timeout=60)
        assert [t.name for t in state.tools] == ["unlock"]
        assert hub.call("changing", "unlock", {}).result(30).content == "unlocked"
        assert changed.wait(30)
        assert hub.call("changing", "secret", {}).result(30).content == "42"
    finally:
        hub.close()


def test_a_result_past_the_size_cap_is_cut_with_a_note(tmp_path):
    hub = McpHub(parse_config({"mcpServers": {"counter": fx.command("counting", tmp_path / "c.txt")}}),
                 max_result_chars=5)
    try:
        hub.start_all(timeout=60)
        result = hub.call("counter", "lookup", {"city": "Paris"}).result(30)
        assert result.truncated and result.content.startswith("Sunny") and "result cut: 5 of 14" in result.content
    finally:
        hub.close()


def test_a_call_answered_before_it_is_tracked_records_itself_without_a_deadlock():
    """The hub answers a call to a server it does not have with a future already done; the store recorded it under
    its own lock while still holding it (the first of eight identical calls hung the same way when the counting
    server answered before the store had attached its callback)."""
    hub = hub_of(counter={"command": "true"})
    store = ReplayStore(hub)
    try:
        answers = []
        caller = threading.Thread(daemon=True, target=lambda: answers.append(
            store.call("nowhere", "lookup", {"city": "Rome"}, "c1").result(5)))
        caller.start()
        caller.join(60)  # a guard: it hung for good before
        assert answers, "the call never returned"
        (result,) = answers
        assert result.is_error and "nowhere" in result.content and store.real_calls == 1
        again = store.call("nowhere", "lookup", {"city": "Rome"}, "c2").result(5)
        assert again.is_error and store.real_calls == 2  # an error is not recorded: the next call runs again
    finally:
        hub.close()
