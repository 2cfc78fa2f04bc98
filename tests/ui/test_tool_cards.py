"""Call cards in the window on the real engine: four panes of a group waiting with calls (their replies' calls
given as data: the model adds nothing to how cards look), cards showing validity and the mock result, a bad
mock being that pane's message with nothing submitted for it, and Continue running the other panes' next turns
in the same engine steps."""

import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.session import PaneResult, RunState
from app.session.tool_cards import INVALID, VALID
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
MOCKS = json.dumps({"get_weather": {"cases": [{"when": {"city": "Paris"}, "result": {"temp_c": 18}}],
                                    "result": {"temp_c": 25}}})


def called(pane, city, arguments=None):
    """The pane's last reply called get_weather (as a run records it)."""
    calls = [{"id": f"call_{city}", "name": "get_weather", "arguments": arguments or json.dumps({"city": city})}]
    spec = pane.spec
    spec.turns = [{"role": "user", "content": f"Weather in {city}?"},
                  {"role": "assistant", "content": "", "tool_calls": calls}]
    spec.result = PaneResult(state=RunState.DONE, finish_reason="tool_calls", tool_calls=calls)


def test_cards_show_calls_and_continue_runs_the_group_together(text_tools_window, loop):
    loaded_window = text_tools_window
    panes = prepare(loaded_window, [""] * 4, max_tokens=12)
    for pane, city in zip(panes, ["Paris", "Rome", "Oslo", "Lima"], strict=True):
        pane.tools.load(json.dumps([WEATHER]), "auto", MOCKS)
        pane.commit_form()
        pane.spec.group = "trip"
        called(pane, city)
    called(panes[3], "Lima", arguments='{"town": "Lima"}')  # does not validate: never answered
    first = panes[0].tool_cards
    assert first.isVisibleTo(panes[0]) and first.cards_box.count() == 1
    card = first.cards_box.itemAt(0).widget()
    assert VALID in card.findChild(QLabel, "toolCardTitle").text()
    assert '"city": "Paris"' in card.findChild(QLabel, "toolCardArguments").text()
    assert '{"temp_c": 18}' in card.findChild(QLabel, "toolCardAnswer").text()
    bad = panes[3].tool_cards.cards_box.itemAt(0).widget()
    assert INVALID in bad.findChild(QLabel, "toolCardTitle").text()
    assert "'city' is a required property" in bad.findChild(QLabel, "toolCardProblem").text()
    panes[2].tools.mocks.setPlainText("{")  # bad mock JSON: that pane's message, nothing submitted for it
    assert "mock results: not JSON" in panes[2].tools.check()
    panes[2].commit_form()
    steps = []
    loaded_window.bridge.add_step_listener(lambda event: steps.append(len(event.tokens)))
    first.auto_steps.setValue(0)
    first.continue_button.click()
    assert [p.busy for p in panes] == [True, True, False, False]
    wait_until(loop, lambda: not any(p.busy for p in panes))
    assert max(steps) == 2  # the two continued panes decoded in the same steps
    assert [t["role"] for t in panes[1].spec.turns] == ["user", "assistant", "tool", "assistant"]
    assert panes[1].spec.turns[2]["content"] == '{"temp_c": 25}'
    assert "Tool result" in panes[1].output.toPlainText() and "get_weather → {\"temp_c\": 25}" in \
        panes[1].output.toPlainText()
    assert len(panes[2].spec.turns) == 2 and len(panes[3].spec.turns) == 2  # left as they were
    answered = panes[1].tool_cards.cards_box.itemAt(0).widget().findChild(QLabel, "toolCardAnswer").text()
    assert answered == 'answered: {"temp_c": 25}' and not panes[1].tool_cards.continue_button.isEnabled()
    note = first.note.text()
    assert "continued 2 pane(s)" in note and "mock results: not JSON" in note and "'city' is a required" in note


def test_the_comparison_table_shows_the_tool_columns_in_sight(text_tools_window, loop):
    window = text_tools_window
    panes = prepare(window, [""] * 2)
    for pane, city in zip(panes, ["Paris", "Oslo"], strict=True):
        pane.tools.load(json.dumps([WEATHER]), "auto", MOCKS)
        pane.commit_form()
        pane.spec.group = "trip"
        called(pane, city)
    dialog = window.compare.open_table(panes[0])
    wait_until(loop, lambda: dialog.isVisible() and dialog.table.viewport().width() > 0)
    table = dialog.table
    labels = [dialog.model.headerData(i, Qt.Horizontal) for i in range(dialog.model.columnCount())]
    at = labels.index("tool calls")
    assert labels[at - 1:at + 3] == ["finish", "tool calls", "valid", "F1 vs expected"]
    header = table.horizontalHeader()
    for column in range(at, at + 3):  # in sight without scrolling sideways
        assert 0 <= header.sectionViewportPosition(column)
        assert header.sectionViewportPosition(column) + header.sectionSize(column) <= table.viewport().width()
    assert {dialog.cell(r, at) for r in range(2)} == {'get_weather({"city": "Paris"})',
                                                           'get_weather({"city": "Oslo"})'}
    header.sectionClicked.emit(at)  # sorting by a moved column sorts by that column
    assert dialog.sort_column == "tool calls" and header.sortIndicatorSection() == at
    dialog.close()


def test_the_note_under_many_cards_is_never_cut_off(text_tools_window, loop):
    """Five calls, one that does not validate, in a short window: the cards scroll, and Continue's red note keeps
    every line inside the pane."""
    window = text_tools_window
    window.resize(1000, 560)
    pane = prepare(window, [""])[0]
    pane.tools.load(json.dumps([WEATHER]), "auto", MOCKS)
    pane.commit_form()
    called(pane, "Paris")
    calls = [{"id": f"call_{i}", "name": "get_weather", "arguments": json.dumps({"city": f"City {i}"})}
             for i in range(4)] + [{"id": "call_bad", "name": "get_weather", "arguments": '{"town": "Lima"}'}]
    pane.spec.turns = [pane.spec.turns[0], {"role": "assistant", "content": "", "tool_calls": calls}]
    pane.spec.result = PaneResult(state=RunState.DONE, finish_reason="tool_calls", tool_calls=calls)
    view = pane.tool_cards
    view.auto_steps.setValue(0)
    view.continue_button.click()
    note = view.note
    assert "call 5 (get_weather) is not answered" in note.text()
    wait_until(loop, lambda: note.isVisible() and note.width() > 0 and view.cards_box.count() == 5)
    wait_until(loop, lambda: note.height() >= note.heightForWidth(note.width()))  # every line shown
    bottom = note.mapTo(pane, note.rect().bottomLeft()).y()
    assert bottom <= pane.contentsRect().bottom(), "the note runs past the pane's bottom"
