"""Sessions in the window: conversations, save/open/new/export, autosave, restore, and a too-long conversation."""

import asyncio
import json
import threading

import pytest
from PySide6.QtWidgets import QMessageBox

from app.session import PaneResult, PaneSpec, RunState, Session, autosave, store
from app.session.autosave import restore
from app.ui.bridge import EngineBridge
from app.ui.window.main_window import MainWindow
from tests.fixtures.step_gate import held_steps
from tests.ui.conftest import wait_until


def greedy(pane, max_tokens=24):
    pane.sampling.temperature.setValue(0.0)
    pane.sampling.max_tokens.setValue(max_tokens)


def test_a_pane_holds_a_conversation(loaded_window, loop):
    pane = loaded_window.grid.panes[0]
    greedy(pane)
    pane.prompt.setPlainText("Name a planet.")
    assert pane.run()
    assert pane.prompt.toPlainText() == ""  # the message moved into the conversation
    wait_until(loop, lambda: not pane.busy)
    first_reply = pane.spec.turns[1]["content"]
    pane.prompt.setPlainText("Why is it interesting?")
    pane.run()
    wait_until(loop, lambda: not pane.busy)
    shown = pane.output.toPlainText()
    assert [t["role"] for t in pane.spec.turns] == ["user", "assistant", "user", "assistant"]
    assert shown.startswith("You\nName a planet.\n\nAssistant\n" + first_reply)
    assert "You\nWhy is it interesting?\n\nAssistant\n" + pane.spec.turns[3]["content"] in shown
    assert pane.state == RunState.DONE and "finish:" in pane.status.text()
    # Rerun last reply keeps the first exchange and regenerates only the last answer.
    pane.run(use_draft=False)  # Conversation → Rerun last reply
    wait_until(loop, lambda: not pane.busy)
    assert len(pane.spec.turns) == 4 and pane.spec.turns[1]["content"] == first_reply
    pane.clear_conversation()
    assert pane.spec.turns == [] and pane.output.toPlainText() == ""


def test_edit_an_earlier_message_and_rerun_from_there(loaded_window, loop):
    pane = loaded_window.grid.panes[0]
    greedy(pane, 8)
    pane.spec.turns = [{"role": "user", "content": "Name a fruit."}, {"role": "assistant", "content": "Apple."},
                       {"role": "user", "content": "Another?"}, {"role": "assistant", "content": "Pear."}]
    pane.load_spec()
    pane.start_edit(0)
    assert pane.prompt.toPlainText() == "Name a fruit." and pane.edit_banner.isVisible()
    pane.prompt.setPlainText("Name a vegetable.")
    pane.run()
    wait_until(loop, lambda: not pane.busy)
    assert [t["content"] for t in pane.spec.turns][:1] == ["Name a vegetable."] and len(pane.spec.turns) == 2
    assert not pane.edit_banner.isVisible()


def test_save_new_open_export_and_a_bad_file(window, tmp_path, monkeypatch):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Discard)
    window.grid.panes[0].prompt.setPlainText("Kept in the file 🙂")
    path = tmp_path / "mine.chorus.json"
    assert window.files.save_as(path)
    assert "mine.chorus.json — Chorus" == window.windowTitle()
    assert window.files.new() and [p.spec.draft for p in window.grid.panes] == []
    assert window.files.open(str(path))
    assert window.grid.panes[0].prompt.toPlainText() == "Kept in the file 🙂"
    assert str(path.resolve()) in window.settings.recent_sessions()
    before = [p.spec for p in window.grid.panes]
    bad = tmp_path / "broken.chorus.json"
    bad.write_text('{"format": "chorus-session", "version": 1, "panes": [', encoding="utf-8")
    assert not window.files.open(str(bad))
    assert "truncated" in window.messages[-1] and "unchanged" in window.messages[-1]
    assert [p.spec for p in window.grid.panes] == before and window.files.path == path
    md = tmp_path / "out.md"
    assert window.files.export("markdown", str(md))
    assert "Kept in the file 🙂" in md.read_text(encoding="utf-8")


def test_changes_are_autosaved_and_restored(window, qtbot, tmp_path, settings):
    autosave = window.files.autosave_path
    window.grid.panes[1].prompt.setPlainText("Autosave me")
    qtbot.waitUntil(lambda: autosave.exists() and "Autosave me" in autosave.read_text(encoding="utf-8"))
    data = json.loads(autosave.read_text(encoding="utf-8"))
    assert data["autosave"]["unsaved"] is True and data["autosave"]["file"] is None
    window.close()  # quit, then start again: the new window owns the autosave now
    restored = MainWindow(EngineBridge(), settings, autosave_path=autosave, restored=restore(autosave))
    qtbot.addWidget(restored)
    assert [p.spec.draft for p in restored.grid.panes] == [p.spec.draft for p in window.grid.panes]
    assert restored.windowTitle() == "Untitled session • — Chorus"


def test_open_from_inside_a_task_enters_no_other_task(window, loop, tmp_path, monkeypatch):
    """Open reads on a worker thread behind a nested Qt loop; called from inside an asyncio task (a coroutine
    that opens a file) that loop would step another task inside this one, so there it reads in place."""
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Discard)
    window.grid.panes[0].prompt.setPlainText("Opened from a coroutine")
    path = tmp_path / "task.chorus.json"
    assert window.files.save_as(path)
    escaped, ticks, ticked = [], [], threading.Event()
    loop.set_exception_handler(lambda _loop, context: escaped.append(context))
    real_load = Session.load

    def load_once_the_other_task_could_tick(p):  # a nested loop would step `other` meanwhile; in place, nothing can
        ticked.wait(1.0)
        return real_load(p)

    monkeypatch.setattr(Session, "load", staticmethod(load_once_the_other_task_could_tick))

    async def other():  # a task that wants to run while the open is in progress
        for _ in range(50):
            ticks.append(1)
            ticked.set()
            await asyncio.sleep(0)

    async def opener():
        asyncio.ensure_future(other())  # its first step is due as soon as this one yields or a loop turns
        return window.files.open(str(path))

    try:
        assert loop.run_until_complete(opener())
        assert escaped == []
        wait_until(loop, lambda: len(ticks) == 50)  # and the other task carries on afterwards
    finally:
        loop.set_exception_handler(None)
    assert window.grid.panes[0].prompt.toPlainText() == "Opened from a coroutine"


def test_a_second_window_says_it_holds_a_session_of_its_own(window, qtbot, settings):
    assert window.windowTitle() == "Untitled session — Chorus"
    second = MainWindow(EngineBridge(), settings, autosave_path=window.files.autosave_path)  # the first owns it
    qtbot.addWidget(second)
    assert second.files.autosave_path != window.files.autosave_path
    assert second.windowTitle() == "Untitled session — Chorus — window 2 (its own session)"
    second.grid.panes[0].prompt.setPlainText("Only here")
    qtbot.waitUntil(lambda: second.windowTitle() == "Untitled session • — Chorus — window 2 (its own session)")
    assert window.windowTitle() == "Untitled session — Chorus"
    second.close()


def test_an_interrupted_reply_comes_back_and_can_be_regenerated(loaded_window, loop, settings, tmp_path, qtbot):
    spec = PaneSpec(turns=[{"role": "user", "content": "Name a color."}], max_tokens=8,
                    result=PaneResult(state=RunState.INTERRUPTED, text="Blu"))
    loaded_window.files.new()
    loaded_window.grid.add_pane(spec)
    pane = loaded_window.grid.panes[-1]
    assert "Assistant (interrupted)\nBlu" in pane.output.toPlainText() and "interrupted" in pane.status.text()
    pane.run()  # no draft: answer the unanswered message again
    wait_until(loop, lambda: not pane.busy)
    assert pane.state == RunState.DONE and pane.spec.turns[-1]["role"] == "assistant"


def test_a_conversation_too_long_for_the_slot_offers_to_drop_the_oldest_exchange(loaded_window, loop):
    pane = loaded_window.grid.panes[0]
    greedy(pane, 8)
    long = "word " * 300  # ~300 tokens: two of these exceed the 512-token slot, one fits
    pane.spec.turns = [{"role": "user", "content": long}, {"role": "assistant", "content": "ok"}]
    pane.spec.draft = "Summarize " + long
    pane.load_spec()
    pane.run_button.click()  # the window's own first pane: its buttons are connected
    wait_until(loop, lambda: not pane.busy)
    assert pane.state == RunState.ERROR and pane.spec.result.error_kind == "context"
    assert "a slot holds 512" in pane.status.text() and pane.drop_button.isVisible()
    assert len(pane.spec.turns) == 3  # nothing was dropped silently
    pane.drop_button.click()
    wait_until(loop, lambda: not pane.busy)
    assert pane.state == RunState.DONE, pane.status.text()
    assert pane.spec.turns[0]["content"] == "Summarize " + long.strip()


def test_a_first_message_too_long_for_the_slot_is_not_offered_to_drop_itself(loaded_window, loop):
    pane = loaded_window.grid.panes[0]
    pane.spec.draft = "Summarize " + "word " * 600
    pane.load_spec()
    pane.run_button.click()
    wait_until(loop, lambda: not pane.busy)
    assert pane.spec.result.error_kind == "context" and "a slot holds 512" in pane.status.text()
    assert not pane.drop_button.isVisible() and len(pane.spec.turns) == 1



def test_text_streaming_in_is_autosaved_while_the_run_goes_on(loaded_window, loop):
    autosave = loaded_window.files.autosave_path
    pane = loaded_window.grid.panes[0]
    greedy(pane, 1000)
    pane.prompt.setPlainText("Write a very long story about a lighthouse keeper and his cat.")
    seen = []  # text lengths of successive autosaves taken while the run streamed

    def two_saves_mid_run() -> bool:
        if pane.busy and autosave.exists():
            saved = Session.load(autosave).panes[0].result  # a streaming pane loads back as interrupted
            if saved.state == RunState.INTERRUPTED and saved.text and (not seen or len(saved.text) > seen[-1]):
                seen.append(len(saved.text))
        return len(seen) >= 2 or not pane.busy

    with held_steps(loaded_window) as gate:  # a step per look: the run lasts until two autosaves were taken
        pane.run()
        wait_until(loop, lambda: two_saves_mid_run() or gate.allow())
    assert len(seen) >= 2, f"only {seen} saved before the run ended"  # saves kept coming while text streamed
    loaded_window.controller.stop_all()
    wait_until(loop, lambda: not pane.busy)


def test_the_autosave_is_encoded_on_the_gui_thread_and_written_on_a_worker(window, monkeypatch):
    gate, writers = threading.Event(), []
    real = store.write_atomic

    def gated(path, text):  # the real write, once the test lets it go
        writers.append(threading.get_ident())
        gate.wait(10)
        real(path, text)

    monkeypatch.setattr(store, "write_atomic", gated)
    window.grid.panes[0].prompt.setPlainText("Written off the GUI thread")
    saver = window.files.saver
    encodes = saver.encodes
    assert window.files.autosave(wait=False)  # as the timer's autosave: it returns while the write waits
    gate.set()
    assert saver.flush(30)
    assert writers and threading.get_ident() not in writers
    assert "Written off the GUI thread" in window.files.autosave_path.read_text(encoding="utf-8")
    assert saver.encodes == encodes + 1 and saver.encode_seconds > 0 and saver.writes >= 1


@pytest.fixture
def no_quit_on_close(qapp):
    """The test's event loop outlives the window (the app's own ends when its last window closes)."""
    qapp.setQuitOnLastWindowClosed(False)
    yield
    qapp.setQuitOnLastWindowClosed(True)


def test_quitting_while_the_loop_runs_stops_the_engine_through_aclose_without_blocking(loaded_window, loop,
                                                                                      no_quit_on_close):
    window = loaded_window
    pane = window.grid.panes[0]
    greedy(pane, 1000)
    pane.prompt.setPlainText("Write a very long story about a lighthouse keeper and his cat.")
    pane.run()
    wait_until(loop, lambda: pane.tokens > 0)
    path = window.files.autosave_path

    async def quit_from_the_loop():
        window.close()  # the close button, while the app runs
        task = window._quit_task
        # close() returned at once: the backends stop in a task, and the loop goes on meanwhile
        assert task is not None and not task.done() and not window.bridge.closed and window.isVisible()
        await task

    loop.run_until_complete(asyncio.wait_for(quit_from_the_loop(), 120))
    assert window.bridge.closed and window.bridge.main is None and not window.isVisible()
    saved = Session.load(path).panes[0].result  # written on quit, mid-stream: it loads back as interrupted
    assert saved.state == RunState.INTERRUPTED and saved.text
    saver = autosave.Autosaver(path)  # the slot was given up: another instance can own it now
    saver.close()


def test_a_large_session_is_autosaved_less_often(window, monkeypatch):
    files = window.files
    assert files.autosave()
    window.grid.panes[0].prompt.setPlainText("a change")  # a small session: AUTOSAVE_MS after a change
    assert files._timer.isActive() and files._timer.interval() == files.autosave_ms
    monkeypatch.setattr(autosave, "WRITE_RATE", 1)  # a byte a second: this session is "large"
    assert files.autosave()
    window.grid.panes[0].prompt.setPlainText("another change")
    size = files.autosave_path.stat().st_size
    assert files._timer.isActive() and size * 1000 - 60_000 < files._timer.interval() <= size * 1000
