"""The Tools menu leads to tool calling, on the real engine: *Add tools to this pane…* opens the pane's Tools
section with an example tool and mock result, which the embedded model calls (generic JSON format, required and
Call first); *Continue all tool calls* continues every pane waiting with calls, in any group or none, their next
turns decoded in the same engine steps; *How tool calling works…* says the steps."""

import json

from PySide6.QtWidgets import QLabel

from app.session import RunState
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare
from tests.ui.test_tool_cards import MOCKS, WEATHER, called


def test_add_tools_to_this_pane_opens_its_tools_with_an_example_the_model_calls(loaded_window, loop):
    window = loaded_window
    pane = prepare(window, ["What is the weather in Paris?"], max_tokens=48)[0]
    window._last_pane = pane
    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Tools")
    texts = [a.text() for a in menu.actions()]
    assert texts[:3] == ["Add tools to this pane…", "Continue all tool calls", "How tool calling works…"]
    assert "Scaling test…" in texts
    window.tool_menu.act_add_tools.trigger()
    assert pane._toggles[3].isChecked() and pane.tools.isVisibleTo(pane)
    assert json.loads(pane.spec.tools)[0]["function"]["name"] == "get_weather" and "get_weather" in pane.spec.mocks
    assert pane.tools.check() is None
    pane.tools.choice.setCurrentText("required")
    pane.tools.call_first.setChecked(True)
    assert pane.run()
    wait_until(loop, lambda: not pane.busy, timeout=120)
    card = pane.tool_cards.cards_box.itemAt(0).widget()
    assert "✓ valid" in card.findChild(QLabel, "toolCardTitle").text()
    assert card.findChild(QLabel, "toolCardAnswer").text().startswith("mock result: ")
    box = window.tool_menu.show_help()
    assert "Continue all" in box.text() and "Call first" in box.text()
    box.close()


def test_continue_all_continues_every_waiting_pane_together(text_tools_window, loop):
    window = text_tools_window
    panes = prepare(window, [""] * 4, max_tokens=12)
    for pane, city, group in zip(panes, ["Paris", "Rome", "Oslo", "Lima"], ["a", "b", None, None], strict=True):
        pane.tools.load(json.dumps([WEATHER]), "auto", MOCKS)
        pane.commit_form()
        pane.spec.group = group
        called(pane, city)
    panes[3].spec.turns = panes[3].spec.turns[:1]  # this one waits with nothing: left alone
    panes[3].spec.result = type(panes[3].spec.result)(state=RunState.DONE)
    steps = []
    window.bridge.add_step_listener(lambda event: steps.append(len(event.tokens)))
    for pane in panes:
        pane.tool_cards.auto_steps.setValue(0)
    window._last_pane = panes[3]
    window.tool_menu.act_continue_all.trigger()
    assert [p.busy for p in panes] == [True, True, True, False]
    assert "continued 3 pane(s)" in window.statusBar().currentMessage()
    wait_until(loop, lambda: not any(p.busy for p in panes))
    assert max(steps) == 3  # the three next turns decoded in the same engine steps
    assert all([t["role"] for t in p.spec.turns] == ["user", "assistant", "tool", "assistant"] for p in panes[:3])
    assert panes[0].tool_cards.continue_all_button.isVisibleTo(panes[0])
    window.tool_menu.act_continue_all.trigger()
    assert window.statusBar().currentMessage() == "No pane is waiting with tool calls"
