"""Pane management and keyboard shortcuts (no model needed: these are pure widget behaviour)."""

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.engine import Completion
from app.session import PaneResult, RunState, conversation


def test_window_starts_with_two_panes_and_the_stats_dock(window):
    assert len(window.grid.panes) == 2
    assert window.stats_dock.isVisible()


def test_add_duplicate_remove(window):
    first = window.grid.panes[0]
    first.prompt.setPlainText("Tell me about llamas")
    first.system_prompt.setPlainText("Be terse.")
    first.sampling.temperature.setValue(0.3)
    first.sampling.stop.setText(r"\n\n, END")
    copy = window.grid.duplicate_pane(first)
    assert window.grid.panes.index(copy) == 1  # right after its original
    same = ("system", "draft", "turns", "sampling", "max_tokens", "stop", "backend")
    assert [getattr(copy.spec, f) for f in same] == [getattr(first.spec, f) for f in same]
    assert copy.spec.stop == ("\n\n", "END") and copy.spec.sampling.temperature == 0.3
    assert copy.spec.id != first.spec.id and window.grid.session.panes[1] is copy.spec
    window.grid.add_pane()
    assert len(window.grid.panes) == 4
    window.grid.remove_pane(first)
    assert first not in window.grid.panes and len(window.grid.panes) == 3
    assert [p.spec for p in window.grid.panes] == window.grid.session.panes  # the model follows the view


def test_an_empty_session_says_what_to_do_until_a_pane_exists(window, qtbot):
    """Before: with no pane the window showed a blank grey area, no hint."""
    hint, grid = window.grid.empty_hint, window.grid
    assert not hint.isVisible()
    for pane in list(grid.panes):
        grid.remove_pane(pane)
    qtbot.waitUntil(hint.isVisible)
    assert "Add a pane (Ctrl+N)" in hint.text.text()
    assert "Help → Examples" in hint.text.text() or "File (Ctrl+O)" in hint.text.text()  # what the window has
    qtbot.waitUntil(lambda: abs(hint.mapTo(grid.viewport(), hint.rect().center()).x()
                                - grid.viewport().rect().center().x()) <= 2)  # centred in the pane area
    centre_y = hint.mapTo(grid.viewport(), hint.rect().center()).y()
    assert abs(centre_y - grid.viewport().rect().center().y()) <= 2
    hint.add_button.click()
    assert len(grid.panes) == 1 and not hint.isVisible()  # gone as soon as a pane exists
    window.act_remove.trigger()  # the last one removed: back again
    qtbot.waitUntil(hint.isVisible)
    window.act_add.trigger()
    assert not hint.isVisible()


def test_columns_reflow_the_grid(window, qtbot):
    window.resize(1700, 900)  # room for three columns beside the statistics
    for _ in range(4):
        window.grid.add_pane()
    window.columns_box.setValue(3)
    layout = window.grid._layout

    def positions():
        return [layout.getItemPosition(layout.indexOf(p))[:2] for p in window.grid.panes]

    qtbot.waitUntil(lambda: positions() == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)])
    assert window.session.view.columns == 3
    window.resize(760, 760)  # too narrow for three: fewer are laid out (the panes wrap), the choice is kept
    qtbot.waitUntil(lambda: window.grid.shown_columns < 3
                    and {column for _, column in positions()} == set(range(window.grid.shown_columns)))
    assert window.session.view.columns == 3


def test_narrow_headers_fold_duplicate_and_remove_into_a_menu(window, qtbot):
    """At four columns a pane is too narrow for every header button, and squeezed buttons elided their labels
    ("Du…te"). Duplicate and Remove fold into "⋯" there instead; its menu does the same, and wide panes unfold."""
    window.resize(1600, 1000)
    window.grid.add_pane()
    window.grid.add_pane()
    window.columns_box.setValue(4)
    header = window.grid.panes[0].header
    buttons = (header.conversation_button, header.compare_button, header.duplicate_button, header.remove_button,
               header.more_button)
    qtbot.waitUntil(lambda: header.more_button.isVisible())
    assert not header.duplicate_button.isVisible() and not header.remove_button.isVisible()
    assert all(b.width() >= b.sizeHint().width() for b in buttons if b.isVisible())  # every label whole
    duplicate, remove = header.more_button.menu().actions()
    duplicate.trigger()
    assert len(window.grid.panes) == 5 and window.grid.panes[1].spec.id != window.grid.panes[0].spec.id
    window.grid.panes[1].header.more_button.menu().actions()[1].trigger()
    assert len(window.grid.panes) == 4
    window.columns_box.setValue(1)
    qtbot.waitUntil(lambda: header.duplicate_button.isVisible() and not header.more_button.isVisible())
    assert all(b.width() >= b.sizeHint().width() for b in buttons if b.isVisible())
    assert remove.text() == "Remove"


def test_shortcuts_add_duplicate_remove(window, qtbot):
    pane = window.grid.panes[0]
    pane.prompt.setFocus()
    qtbot.keyClick(pane.prompt, Qt.Key_N, Qt.ControlModifier)
    assert len(window.grid.panes) == 3
    new = window.grid.panes[-1]
    new.prompt.setPlainText("duplicated text")
    new.prompt.setFocus()
    qtbot.keyClick(new.prompt, Qt.Key_D, Qt.ControlModifier)
    assert len(window.grid.panes) == 4 and window.grid.panes[-1].prompt.toPlainText() == "duplicated text"
    window.grid.panes[-1].prompt.setFocus()
    qtbot.keyClick(window.grid.panes[-1].prompt, Qt.Key_W, Qt.ControlModifier)
    assert len(window.grid.panes) == 3


def test_run_shortcut_without_a_model_explains_instead_of_crashing(window, qtbot):
    pane = window.grid.panes[0]
    pane.prompt.setFocus()
    qtbot.keyClick(pane.prompt, Qt.Key_Return, Qt.ControlModifier)
    assert "No model" in pane.status.text()
    assert pane.prompt.toPlainText() and not pane.spec.turns  # nothing lost, nothing half-done


def test_empty_prompt_is_refused_with_a_message(window):
    pane = window.grid.panes[0]
    pane.prompt.clear()
    pane.run()
    assert "Type a message first" in pane.status.text()


def test_menus_expose_every_action(window):
    titles = {a.text() for m in window.menuBar().actions() for a in m.menu().actions()}
    for wanted in ("Add pane", "Run all", "Stop all", "Open model…", "Settings…", "Run pane", "Stop pane",
                   "Duplicate pane", "Remove pane"):
        assert wanted in titles


def test_pane_out_of_view_holds_its_text_until_seen_or_finished(window, qtbot):
    window.resize(900, 600)
    window.columns_box.setValue(1)
    panes = [window.grid.panes[0]] + [window.grid.add_pane() for _ in range(5)]
    bar = window.grid.verticalScrollBar()
    top, bottom = panes[0], panes[-1]
    QApplication.processEvents()  # add_pane reveals each pane again once laid out (queued): let those scrolls run
    qtbot.waitUntil(lambda: bar.maximum() > 0)  # the grid has been laid out at its new size
    bar.setValue(0)
    qtbot.waitUntil(lambda: bottom.output.visibleRegion().isEmpty() and not top.output.visibleRegion().isEmpty())
    # The runner's part is played by hand (the model adds nothing here): results change, views follow.
    for pane in (top, bottom):
        pane.spec.turns = [{"role": "user", "content": "Say something."}]
        pane.spec.result = PaneResult(state=RunState.GENERATING)
    shown = "You\nSay something.\n\nAssistant\n"
    qtbot.waitUntil(lambda: top.output.toPlainText() == shown and bottom.output.toPlainText() == shown)
    for pane in (top, bottom):
        pane.spec.result.text += "first "
    qtbot.waitUntil(lambda: top.output.toPlainText() == shown + "first ")
    assert bottom.output.toPlainText() == shown  # nothing laid out or painted while nobody can see it
    bottom.spec.result.text += "second "

    bar.setValue(bar.maximum())
    qtbot.waitUntil(lambda: not bottom.output.visibleRegion().isEmpty())
    bottom.spec.result.text += "third"  # the next streamed text brings what was held back with it
    qtbot.waitUntil(lambda: bottom.output.toPlainText() == shown + "first second third")

    top.spec.result.text += "later"  # now out of view; finishing shows all of it
    QApplication.processEvents()  # the view's refresh runs (it is queued, once per event-loop turn)
    assert top.output.toPlainText() == shown + "first "
    top.spec.result.finish(Completion(request_id=100, text="first later", token_ids=[1, 2], finish_reason="stop",
                                      error=None, prompt_tokens=5, generated_tokens=2, queue_wait_s=0.0, ttft_s=0.1,
                                      decode_tps=10.0))
    conversation.record_reply(top.spec)
    qtbot.waitUntil(lambda: top.output.toPlainText() == shown + "first later")
    assert top.state == RunState.DONE and top.spec.turns[-1] == {"role": "assistant", "content": "first later"}


def test_state_stripe_takes_each_state_colour(window):
    from app.ui.pane.prompt_pane import STATE_COLORS

    pane = window.grid.panes[0]

    def stripe():
        return pane.grab().toImage().pixelColor(2, pane.height() // 2)

    assert stripe() not in STATE_COLORS.values()  # an idle pane has no stripe
    for state, colour in STATE_COLORS.items():
        pane.spec.result.state = state
        pane.show_state()
        assert stripe() == colour, state
    pane.spec.result.state = RunState.DONE
    pane.show_state()
    pane.show_error("Type a message first.")
    assert stripe() == STATE_COLORS[RunState.ERROR]


def test_headers_say_what_differs_between_panes(window):
    first, second = window.grid.panes
    assert first.title.text() == "Pane 1"  # nothing differs yet
    second.sampling.temperature.setValue(0.2)
    second.sampling.seed.setText("3")
    assert "T 0.8" in first.title.text() and "T 0.2" in second.title.text()
    assert "seed 3" in second.title.text() and "seed random" in first.title.text()
    second.system_prompt.setPlainText("<b>Be brief</b>")
    assert "&lt;b&gt;Be brief" in second.title.text()  # shown as text, never as markup
