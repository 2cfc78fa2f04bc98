"""A pane gives its reply the room (output first), keeps its header on one line, names its controls for a
screen reader, and can be walked with Tab: editor -> Run -> ... -> reply."""

import pytest
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.session import PaneResult, RunState, sweep
from app.ui.pane.editor import EXPANDED_HEIGHT
from app.ui.widgets.screen_fit import DEFAULT_SIZE
from tests.ui.conftest import wait_until
from tests.ui.test_arena_window import open_arena, three_variants
from tests.ui.test_end_to_end import prepare

QUESTIONS = ["Name a fruit.", "Name a country.", "Name a color.", "Name an animal.", "Name a river.",
             "Name a tree.", "Name a city.", "Name a bird."]


def answered(window, n):
    """As if each pane had run once (for what the model adds nothing to: layout, focus, names)."""
    while len(window.grid.panes) < n:
        window.grid.add_pane()
    for pane in window.grid.panes:
        pane.spec.turns = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
        pane.spec.result = PaneResult(state=RunState.DONE, text="Hello!", finish_reason="stop")
    QApplication.processEvents()
    return window.grid.panes


def focus_window(window, qtbot):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)


@pytest.mark.parametrize("columns", [2, 4])
def test_after_a_run_the_reply_takes_most_of_the_pane(loaded_window, loop, columns):
    """Before: the editor, three folded sections, three buttons, the rating row and the status took more height
    than the reply (41 % of the pane at the default size)."""
    window = loaded_window
    # 4 columns of panes need 1700 px beside the statistics (a narrower grid lays out fewer)
    window.resize(DEFAULT_SIZE if columns < 4 else QSize(1700, DEFAULT_SIZE.height()))
    panes = prepare(window, QUESTIONS[:2 * columns], max_tokens=8)
    window.columns_box.setValue(columns)
    assert window.run_all() == 2 * columns
    wait_until(loop, lambda: not any(p.busy for p in panes), timeout=120)
    window.stats_dock.setFocus()  # no editor holds the focus
    QApplication.processEvents()
    shares = [p.output.height() / p.height() for p in panes]
    assert min(shares) > 0.5, shares
    assert all(p.prompt.folded and p.prompt.height() == p.prompt.folded_height() for p in panes)
    assert all(p.reply_text() and p.output.isVisible() for p in panes)


def test_the_folded_editor_unfolds_when_focused_and_keeps_its_text(window, qtbot):
    focus_window(window, qtbot)
    pane = answered(window, 2)[0]
    pane.prompt.setPlainText("a follow-up\nover two lines")
    window.stats_dock.setFocus()
    qtbot.waitUntil(lambda: pane.prompt.folded)
    folded = pane.prompt.height()
    pane.prompt.setFocus()
    qtbot.waitUntil(lambda: pane.prompt.height() == EXPANDED_HEIGHT > folded)
    assert pane.prompt.toPlainText() == "a follow-up\nover two lines" == pane.spec.draft
    pane.prompt.moveCursor(QTextCursor.End)
    QTest.keyClicks(pane.prompt, " more")
    QTest.keyClick(pane.prompt, Qt.Key_Tab)  # Tab leaves the editor (no tab character typed), which folds
    qtbot.waitUntil(lambda: pane.prompt.folded)
    assert pane.spec.draft.endswith(" more") and "\t" not in pane.spec.draft
    assert pane.prompt.toPlainText() == pane.spec.draft  # the view renders the draft; folding lost nothing


def test_a_click_that_takes_the_focus_from_the_editor_lands_before_the_editor_folds(window, qtbot):
    """Folding at once moved Run up under a held mouse button; the fold waits for the release."""
    focus_window(window, qtbot)
    pane = answered(window, 2)[0]
    pane.prompt.setPlainText("Next question")
    pane.prompt.setFocus()
    qtbot.waitUntil(lambda: pane.prompt.hasFocus() and not pane.prompt.folded)
    where = pane.run_button.geometry()
    QTest.mousePress(pane.run_button, Qt.LeftButton)
    qtbot.waitUntil(pane.run_button.hasFocus)
    assert not pane.prompt.folded and pane.run_button.geometry() == where  # nothing moved under the press
    QTest.mouseRelease(pane.run_button, Qt.LeftButton)
    assert "No model" in pane.status.text()  # the click ran the pane (no model is loaded here)
    qtbot.waitUntil(lambda: pane.prompt.folded)
    assert pane.prompt.toPlainText() == "Next question"


def test_a_fresh_pane_shows_its_settings_and_a_full_editor(window):
    pane = window.grid.panes[0]
    assert not pane.has_reply() and not pane.prompt.folded and pane.prompt.height() == EXPANDED_HEIGHT
    assert all(t.isVisible() for t in pane._toggles) and not pane.rating.isVisible()


def test_after_a_reply_the_settings_open_from_the_pane_menu(window, qtbot):
    pane = answered(window, 2)[0]
    system, sampling, output, tools = pane._toggles
    assert not any(t.isVisible() for t in pane._toggles) and pane.rating.isVisible()
    pane.controls.menu.aboutToShow.emit()
    entries = {a.text(): a for a in pane.controls.menu.actions()}
    assert {"System prompt", "Sampling", "Output", "Tools", "Copy reply"} <= set(entries)
    entries["Sampling"].trigger()
    assert sampling.isVisible() and pane.sampling.isVisible() and not system.isVisible()
    sampling.click()  # its own toggle closes it again, and hides with it
    assert not sampling.isVisible() and not pane.sampling.isVisible()
    entries["Copy reply"].trigger()
    assert QApplication.clipboard().text() == "Hello!"


def test_in_narrow_columns_the_rating_takes_a_line_of_its_own_and_shows_whole(window, qtbot):
    window.resize(800, 560)
    panes = answered(window, 4)
    for pane in panes:
        pane.spec.group = "g"
    window.grid.show_group_in_columns("g")
    pane = panes[0]
    qtbot.waitUntil(lambda: pane.width() < 250 and pane.rating.isVisible())
    rating, row = pane.rating, pane.run_button
    qtbot.waitUntil(lambda: rating.geometry().top() > pane.controls.menu_button.geometry().bottom())  # below
    assert rating.width() >= rating.minimumSizeHint().width() and row.width() >= row.minimumWidth()
    window.grid.show_group_in_columns(None)  # back to the grid: wide enough for one row again
    qtbot.waitUntil(lambda: abs(rating.geometry().center().y() - row.geometry().center().y()) < row.height())


def test_headers_elide_and_never_wrap(window, qtbot):
    """Before: at 800x560 with 2 columns, "Pane 1  seed random" wrapped onto three lines."""
    window.resize(800, 560)
    window.columns_box.setValue(2)
    window.grid.panes[1].sampling.seed.setText("3")
    window.grid.panes[1].spec.title = ("A pane with a long title about the sea, the sky and the wind at night, "
                                        "and the boats that sail on it when the moon is up")
    qtbot.waitUntil(lambda: "seed random" in window.grid.panes[0].title.text())
    qtbot.waitUntil(lambda: window.docks_strip)  # the statistics under the panes: the panes have their width
    for pane in window.grid.panes:
        title = pane.title
        needed = title.heightForWidth(title.width()) if title.hasHeightForWidth() else title.sizeHint().height()
        assert needed < 2 * title.fontMetrics().lineSpacing(), title.text()  # one line at the width it has
    first, second = (p.title for p in window.grid.panes)
    assert "seed random" in first.toolTip() and "seed 3" in second.toolTip()  # all of it, on hover
    shown, detail = second.elided()
    assert shown.endswith("…") or detail.endswith("…")  # cut to fit, not wrapped
    window.resize(1600, 1000)
    window.columns_box.setValue(1)
    qtbot.waitUntil(lambda: first.elided() == first.parts)  # room again: whole


def test_a_sweep_s_values_show_whole_on_each_header_in_the_grid_and_in_columns(window, qtbot):
    """Before: at 1280x800 in 3 columns the headers read only "Pane 3", "Pane 4", "Pane 5" (the title kept its
    room and what differs was dropped), and in the group's columns the values were cut to "T 0…"."""
    window.resize(1280, 800)
    window.columns_box.setValue(3)
    source = answered(window, 1)[0]
    source.spec.title = "A pane with a long title about the sea"
    views = window.compare.add_variants(source, sweep.expand(source.spec, {"temperature": [0.25, 0.75, 1.25]}),
                                        run=False)
    titles = [v.title for v in views]
    wanted = ["T 0.25", "T 0.75", "T 1.25"]
    qtbot.waitUntil(lambda: [t.parts[1] for t in titles] == wanted)

    def clear_of_the_buttons(header) -> bool:
        buttons = [b for b in (header.conversation_button, header.compare_button, header.more_button) if b.isVisible()]
        return all(header.title.geometry().right() < b.geometry().left() and b.width() >= b.sizeHint().width()
                   for b in buttons)

    # whole, beside the pane's whole name; buttons fold into "⋯" to make room, none overlaps the title
    whole = [(v.spec.label, value) for v, value in zip(views, wanted, strict=True)]
    qtbot.waitUntil(lambda: [t.elided() for t in titles] == whole)
    qtbot.waitUntil(lambda: all(clear_of_the_buttons(v.header) for v in views))
    window.resize(800, 560)
    window.grid.show_group_in_columns(source.spec.group)
    qtbot.waitUntil(lambda: all(v.width() == v.maximumWidth() and v.width() < 250 for v in views))
    qtbot.waitUntil(lambda: [t.elided()[1] for t in titles] == wanted)  # the name gives way first
    qtbot.waitUntil(lambda: all(clear_of_the_buttons(v.header) for v in views))


def test_controls_have_accessible_names(window):
    pane = answered(window, 2)[1]
    label = pane.spec.label
    assert pane.run_button.accessibleName() == f"Run {label}"
    assert pane.stop_button.accessibleName() == f"Stop {label}"
    assert pane.prompt.accessibleName() == f"Message for {label}"
    assert pane.output.accessibleName() == f"Conversation of {label}"
    assert [s.accessibleName() for s in pane.rating.stars] == [f"Rate {i} of 5" for i in range(1, 6)]
    pane.rating.stars[2].click()
    assert pane.rating.stars[0].accessibleDescription() == "Rated 3 of 5"
    assert label in pane.rating.note.accessibleName() and label in pane.controls.menu_button.accessibleName()
    pane.spec.title = "Sea"  # renamed: the names follow
    assert pane.run_button.accessibleName() == "Run Sea"


def test_arena_vote_buttons_have_accessible_names(loaded_window, loop):
    view = open_arena(loaded_window, loop, three_variants(loaded_window, max_tokens=4))
    assert [b.accessibleName() for b in view.vote_buttons.values()] == [
        "Vote: A is better", "Vote: B is better", "Vote: Tie", "Vote: Both bad"]
    view.close()


def test_tab_walks_a_pane_from_its_editor_to_its_reply(window, qtbot):
    focus_window(window, qtbot)
    pane = answered(window, 2)[0]
    pane.prompt.setFocus()
    qtbot.waitUntil(pane.prompt.hasFocus)
    expected = [pane.run_button, *pane.rating.stars, pane.rating.note, pane.controls.menu_button, pane.output]
    seen = []
    for _ in expected:
        QTest.keyClick(QApplication.focusWidget(), Qt.Key_Tab)
        seen.append(QApplication.focusWidget())
    assert seen == expected  # Stop is disabled (nothing runs): skipped
    QTest.keyClick(QApplication.focusWidget(), Qt.Key_Backtab)
    assert QApplication.focusWidget() is pane.controls.menu_button
    window.grid.panes[1].prompt.setFocus()  # a fresh pane: no rating yet, its settings toggles are not in the way
    window.grid.panes[1].spec.turns = []
    window.grid.panes[1].spec.result = PaneResult()
    fresh = window.grid.panes[1]
    qtbot.waitUntil(lambda: fresh.prompt.hasFocus() and not fresh.has_reply())
    QTest.keyClick(fresh.prompt, Qt.Key_Tab)
    assert QApplication.focusWidget() is fresh.run_button
