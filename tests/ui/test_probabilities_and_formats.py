"""Token probabilities in a pane (tint, hover, branch) and output formats, on the real engine."""

import math

from PySide6.QtCore import QPoint
from PySide6.QtGui import QPalette, QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QToolTip

from app.session import RunState
from app.ui.widgets.token_tint import color_for
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def run_with_probabilities(window, loop, prompt="Name a fruit.", max_tokens=12):
    pane = prepare(window, [prompt], max_tokens=max_tokens)[0]
    pane.options.probabilities.setChecked(True)
    assert pane.run()
    wait_until(loop, lambda: not pane.busy)
    return pane


def test_the_toggle_tints_each_token_by_its_probability(loaded_window, loop):
    pane = run_with_probabilities(loaded_window, loop)
    view, entries = pane.output, pane.spec.result.token_logprobs
    assert pane.spec.show_probabilities and entries and view.token_spans
    assert pane.options.legend.isVisible() and "&lt;10%" in pane.options.legend.text()
    for start, end, index in view.token_spans:
        cursor = QTextCursor(view.document())
        cursor.setPosition(start + 1)  # the format of the character just before the cursor
        expected = color_for(math.exp(entries[index].logprob), view.palette().color(QPalette.Base))
        assert cursor.charFormat().background().color() == expected
        assert view.toPlainText()[start:end] == entries[index].text
    pane.options.probabilities.setChecked(False)  # off: plain text again
    assert not pane.spec.show_probabilities and not view.token_spans and not pane.options.legend.isVisible()


def test_hovering_a_token_shows_its_alternatives(loaded_window, loop):
    pane = run_with_probabilities(loaded_window, loop)
    view = pane.output
    start, _end, index = view.token_spans[1]
    cursor = QTextCursor(view.document())
    cursor.setPosition(start + 1)
    point = view.cursorRect(cursor).center() - QPoint(2, 0)
    QTest.mouseMove(view.viewport(), point)
    wait_until(loop, QToolTip.isVisible, timeout=5)
    entry = pane.spec.result.token_logprobs[index]
    text = QToolTip.text()
    assert "%" in text and all(alt.replace(" ", "␣") in text for _, alt, _ in entry.top if alt.strip())


def test_choosing_an_alternative_branches_into_a_new_pane_that_continues_from_it(loaded_window, loop):
    pane = run_with_probabilities(loaded_window, loop, max_tokens=8)
    view, entries = pane.output, pane.spec.result.token_logprobs
    index = 2
    alternative = entries[index].top[1][1]  # the second most likely token at position 3
    menu = view.branch_menu(index, entries[index])
    menu.actions()[1].trigger()
    panes = loaded_window.grid.panes
    branched = panes[panes.index(pane) + 1]
    prefix = "".join(e.text for e in entries[:index]) + alternative
    assert branched.spec.result.text.startswith(prefix)  # its reply starts with the chosen token
    wait_until(loop, lambda: not branched.busy)
    assert branched.state == RunState.DONE
    assert branched.spec.turns[-1]["role"] == "assistant" and branched.spec.turns[-1]["content"].startswith(prefix)
    assert branched.spec.turns[:-1] == pane.spec.turns[:-1]  # the same question
    assert branched.spec.result.cached_tokens > 0  # the shared prompt came from the prefix cache


def test_a_broken_schema_is_the_panes_error_and_a_valid_one_is_checked(loaded_window, loop):
    pane = prepare(loaded_window, ["Is the sky blue? Answer as JSON."], max_tokens=60)[0]
    options = pane.options
    options.kind.setCurrentIndex(options.kind.findData("schema"))
    options.editor.setPlainText('{"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}')
    assert "not JSON" in options.check()
    assert not pane.run()
    assert "Output format" in pane.status.text() and pane.state == RunState.IDLE
    options.kind.setCurrentIndex(options.kind.findData("grammar"))
    options.editor.setPlainText('root ::= "yes" | (')
    assert "Expected ')'" in options.check()  # the loaded model's own parser
    options.kind.setCurrentIndex(options.kind.findData("schema"))
    options.editor.setPlainText('{"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, '
                                '"required": ["answer"]}')
    assert options.check() is None
    assert pane.run()
    wait_until(loop, lambda: not pane.busy)
    assert pane.spec.result.text.replace(" ", "") in ('{"answer":"yes"}', '{"answer":"no"}')
    assert "✓ valid JSON, matches the schema" in pane.status.text()
