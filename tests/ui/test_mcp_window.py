"""MCP servers in the window, on real MCP servers (tests/fixtures/mcp_servers.py) and the embedded model.

A session file that names a server opens without starting it: the bar shows the exact command line and the
server's process never starts (its marker file never appears) until the user agrees. A pane offering the server's
tools runs on the embedded model; its call waits on a card with the arguments and Approve once / Always / Deny;
approved, it runs once, Continue gives the result to the model as the tool turn, and another pane's same call is
replayed from the recording. The servers dialog shows a server that failed to start with the tail of its stderr."""

import sys

import pytest
from PySide6.QtWidgets import QLabel, QPushButton

from app.mcp import FAILED, READY
from app.session import PaneSpec, Session
from app.session.mcp_calls import ASKING, DONE
from tests.fixtures import mcp_servers
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def entry(kind, tmp_path, **files):
    args = [mcp_servers.HERE, kind] + [a for k, v in files.items() for a in (f"--{k}", str(tmp_path / v))]
    return {"command": sys.executable, "args": args}


@pytest.fixture
def counting(tmp_path):
    return entry("counting", tmp_path, count="count.txt", started="started.txt")


def test_a_session_file_naming_a_server_opens_without_starting_it(window, loop, tmp_path, counting):
    path = tmp_path / "tools.chorus.json"
    saved = Session(panes=[PaneSpec(draft="Weather in Paris?", mcp=("counting",))])
    saved.mcp_servers = {"counting": counting}
    saved.save(path)
    window.files.unsaved = False
    assert window.files.open(str(path))
    bar = window.consent_bar
    assert bar.isVisible()
    assert f"counting: {sys.executable} {mcp_servers.HERE} counting" in bar.text.text()  # the exact command line
    loop.run_until_complete(_settle(loop))
    assert not (tmp_path / "started.txt").exists()  # no process was started
    assert window.mcp.servers.state("counting").status == "stopped" and window.mcp.mcp.hub is None
    pane = window.grid.panes[0]
    assert "counting: not running" in pane.mcp_picker.offered.text()
    bar.agree_button.click()
    wait_until(loop, lambda: window.mcp.servers.state("counting").status == READY, timeout=60)
    assert (tmp_path / "started.txt").exists() and not bar.isVisible()
    wait_until(loop, lambda: "lookup (counting): The weather in a city" in pane.mcp_picker.offered.text())


async def _settle(loop):
    """Let queued work run (a start, were one asked for, would have begun)."""
    import asyncio
    for _ in range(20):
        await asyncio.sleep(0)


def card(pane, index=0):
    return pane.tool_cards.cards_box.itemAt(index).widget()


def test_a_call_waits_for_approval_runs_once_and_is_replayed(loaded_window, loop, tmp_path, counting):
    window = loaded_window
    servers, calls = window.mcp.servers, window.mcp.calls
    servers.set_server("counting", counting)  # added by the user here: agreed to
    servers.start("counting")
    wait_until(loop, lambda: servers.state("counting").status == READY, timeout=60)
    panes = prepare(window, ["Weather in Paris?", "Weather in Paris?"], max_tokens=40)
    for pane in panes:
        pane.tools.choice.setCurrentText("lookup")
        pane.tools.call_first.setChecked(True)
        pane.commit_form()
        pane.mcp_picker.toggle("counting/lookup", True)
        pane.tool_cards.auto_steps.setValue(0)
        pane.spec.group = "paris"  # one run group: the same call runs once
    assert "lookup (counting)" in panes[0].mcp_picker.offered.text()
    assert window.run_all() == 2
    wait_until(loop, lambda: not any(p.busy for p in panes), timeout=300)
    first, second = panes
    assert "not sent yet" in card(first).findChild(QLabel, "toolCardTitle").text()
    first.tool_cards.continue_button.click()  # the group's calls go to the server: asked about first
    states = calls.states(first.spec)
    assert [s.status for s in states.values()] == [ASKING]  # the default mode asks
    shown = card(first)
    assert "waiting for approval" in shown.findChild(QLabel, "toolCardTitle").text()
    assert '"city"' in shown.findChild(QLabel, "toolCardArguments").text()
    shown.findChild(QPushButton, "toolCard_approve").click()
    wait_until(loop, lambda: all(s.status == DONE for s in calls.states(first.spec).values()), timeout=60)
    card(second).findChild(QPushButton, "toolCard_approve").click()
    wait_until(loop, lambda: all(s.status == DONE for s in calls.states(second.spec).values()), timeout=60)
    assert all(s.replayed for s in calls.states(second.spec).values())
    assert len((tmp_path / "count.txt").read_text().splitlines()) == 1  # one real call for both panes
    answer = card(second).findChild(QLabel, "toolCardAnswer")
    assert answer.text().startswith("replayed: Sunny in ") and answer.textFormat() == answer.textFormat().PlainText
    wait_until(loop, lambda: all(len(p.spec.turns) == 4 and not p.busy for p in panes), timeout=300)
    tool_turn = first.spec.turns[2]
    assert tool_turn["role"] == "tool" and tool_turn["content"].startswith("Sunny in ")
    assert second.spec.turns[2]["content"] == tool_turn["content"]
    assert [r.content for r in window.session.mcp_records] == [tool_turn["content"]]  # saved with the session


def test_a_server_that_fails_to_start_shows_its_stderr_tail(window, loop, tmp_path):
    link = window.mcp.servers
    link.set_server("broken", entry("broken", tmp_path))
    dialog = window.mcp.open_servers()
    assert dialog.table.item(0, 0).text() == "broken" and dialog.table.item(0, 2).text() == "stopped"
    dialog.start_button.click()
    wait_until(loop, lambda: link.state("broken").status == FAILED, timeout=60)
    wait_until(loop, lambda: dialog.table.item(0, 2).text() == "failed to start")
    assert "missing API key, cannot start" in dialog.detail.toPlainText()
    assert dialog.restart_button.isEnabled()
    dialog.close()


def test_tool_output_is_plain_text(window):
    from app.session.tool_cards import VALID, Card
    from app.ui.pane.tool_cards_view import card_widget
    shown = card_widget(Card("c", "lookup", "{}", "{}", VALID, answer="<b>bold</b><img src=x>", server="s",
                             call_status=DONE))
    label = shown.findChild(QLabel, "toolCardAnswer")
    assert label.text() == "result: <b>bold</b><img src=x>" and label.textFormat() == label.textFormat().PlainText


def test_a_crash_mid_call_is_the_calls_error_and_the_server_offers_a_restart(window, loop, tmp_path):
    from app.mcp import CRASHED
    from app.session import PaneResult, RunState
    from app.session.mcp_calls import ERROR

    servers, calls = window.mcp.servers, window.mcp.calls
    servers.set_server("crashing", entry("crashing", tmp_path))
    servers.set_mode("crashing", "always")
    servers.start("crashing")
    wait_until(loop, lambda: servers.state("crashing").status == READY, timeout=60)
    pane = window.grid.panes[0]
    pane.mcp_picker.toggle("crashing", True)
    other = window.grid.panes[1]
    call = [{"id": "x", "name": "crash", "arguments": "{}"}]  # the reply's call, as a run records it
    pane.spec.turns = [{"role": "user", "content": "crash"}, {"role": "assistant", "content": "", "tool_calls": call}]
    pane.spec.result = PaneResult(state=RunState.DONE, finish_reason="tool_calls", tool_calls=call)
    pane.tool_cards.auto_steps.setValue(0)
    note = pane.tool_cards.continue_calls()
    assert "asked the MCP servers" in note, note
    wait_until(loop, lambda: [s.status for s in calls.states(pane.spec).values()] == [ERROR], timeout=60)
    assert "crashing" in card(pane).findChild(QLabel, "toolCardAnswer").text()
    assert pane.spec.turns[2]["role"] == "tool"  # the model is given the error as the tool's answer
    assert other.spec.turns == []  # other panes carry on as they were
    wait_until(loop, lambda: servers.state("crashing").status == CRASHED, timeout=60)
    dialog = window.mcp.open_servers()
    wait_until(loop, lambda: dialog.table.item(0, 2).text() == "crashed")
    assert dialog.restart_button.isEnabled() and "crashing on purpose" in dialog.detail.toPlainText()
    dialog.restart_button.click()
    wait_until(loop, lambda: servers.state("crashing").status == READY, timeout=60)
    dialog.close()


def test_a_changed_command_is_asked_about_again_and_runs_as_agreed(window, loop, tmp_path, counting):
    servers = window.mcp.servers
    servers.set_server("counting", counting)
    servers.start("counting")
    wait_until(loop, lambda: servers.state("counting").status == READY, timeout=60)
    changed = entry("counting", tmp_path, count="count.txt", started="second.txt")
    window.session.mcp_servers = {"counting": changed}  # a session file opened with another command line
    assert window.consent_bar.isVisible() and "second.txt" in window.consent_bar.text.text()
    assert not (tmp_path / "second.txt").exists()
    window.consent_bar.agree_button.click()
    wait_until(loop, lambda: (tmp_path / "second.txt").exists() and servers.state("counting").status == READY,
               timeout=60)
