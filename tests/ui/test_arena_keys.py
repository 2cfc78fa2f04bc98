"""The arena's vote keys on the real model: a key pressed while both outputs generate is not dropped silently."""

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from tests.fixtures.step_gate import held_steps
from tests.ui.conftest import wait_until
from tests.ui.test_arena_window import open_arena, three_variants


def test_a_vote_key_pressed_while_both_outputs_generate_says_to_wait(loaded_window, loop):
    panes = three_variants(loaded_window, max_tokens=200)
    with held_steps(loaded_window) as gate:  # a step per look: both still generate when both have text
        view = open_arena(loaded_window, loop, panes)
        wait_until(loop, lambda: all(r.busy and r.text for r in view.results.values()) or gate.allow())
        assert not view.ready()  # nothing is pumped between the check above and the key
        QTest.keyClick(view, Qt.Key_1)
        assert loaded_window.session.votes == [] and view.voted is None
        assert "Wait for both outputs" in view.status.text()
        shown = len(view.sides["a"].text.toPlainText())
        wait_until(loop, lambda: view.ready() or len(view.sides["a"].text.toPlainText()) > shown or gate.allow())
        if not view.ready():  # more text came in, and the status still says why the key did nothing
            assert "Wait for both outputs" in view.status.text()
    for handle in view.handles:
        handle.cancel()  # end both now: the keys work once both outputs have ended
    wait_until(loop, view.ready)
    assert "Which is better?" in view.status.text()
    QTest.keyClick(view, Qt.Key_2)
    assert [v.winner for v in loaded_window.session.votes] == ["b"]
    view.close()
