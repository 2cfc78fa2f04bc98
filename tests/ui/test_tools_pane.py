"""A pane's tools editor on the real engine: checked as typed, a bad definition is the pane's message and nothing
is submitted, good tools run; the Tools section says how the embedded model takes tools (llama.cpp's generic JSON
format, its template having none), in words that are not cut off."""

import json

from app.engine.types import TOOLS_AS_TEXT
from app.session import RunState
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}


def test_bad_tools_are_the_panes_message_and_good_ones_run(loaded_window, loop):
    pane = prepare(loaded_window, ["Weather in Paris?"], max_tokens=8)[0]
    bad = json.dumps([WEATHER, {"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}])
    pane.tools.editor.setPlainText(bad)
    assert "tool 2 (f): function.parameters is not a valid JSON Schema" in pane.tools.check()
    assert not pane.run()
    assert "tool 2 (f)" in pane.status.text() and pane.state == RunState.IDLE and pane.spec.result.text == ""
    assert pane.spec.tools == bad and pane.spec.turns == []  # kept as written; nothing was submitted
    pane.tools.editor.setPlainText("[{")
    assert "tools: not JSON" in pane.tools.check()
    pane.tools.editor.setPlainText(json.dumps([WEATHER]))
    pane.tools.choice.setCurrentText("get_weather")
    assert pane.tools.check() is None and "✓ 1 tool(s): get_weather" in pane.tools.problem.text()
    assert pane.run()
    wait_until(loop, lambda: not pane.busy)
    assert pane.spec.tool_choice == "get_weather" and TOOLS_AS_TEXT not in pane.status.text()  # the generic format


def test_the_tools_section_says_how_the_embedded_model_takes_tools(loaded_window, loop):
    from app.session import MAIN

    pane = prepare(loaded_window, ["Weather in Paris?"])[0]
    support = pane.tools.support
    assert support.text() == "Tools: generic JSON format (this model's template has none)"
    assert support.toolTip() == "" and support.wordWrap()
    loaded_window.resize(1100, 1000)
    loaded_window.show()
    pane._toggles[3].setChecked(True)  # the Tools section open
    wait_until(loop, lambda: support.isVisible() and support.width() > 0)
    wait_until(loop, lambda: support.height() >= support.heightForWidth(support.width()))  # every line shown
    assert loaded_window.grid.add_pane().tools.support.text() == support.text()  # a pane added later says it too
    pane.header.sig_backend_chosen.emit("other")  # a pane on a server: the server's template decides
    assert "server other" in support.text()
    pane.header.sig_backend_chosen.emit(MAIN)
    assert support.text().startswith("Tools: generic JSON format")


def test_call_first_is_set_in_the_tools_section_kept_and_sent(loaded_window, loop):
    from app.session import conversation
    from app.session.store import decode, encode

    pane = prepare(loaded_window, ["Weather in Paris?"], max_tokens=8)[0]
    pane.tools.editor.setPlainText(json.dumps([WEATHER]))
    pane.tools.check()
    assert not pane.tools.call_first.isChecked() and not pane.tools.call_first.isEnabled()  # auto: no effect
    pane.tools.choice.setCurrentText("required")
    assert pane.tools.call_first.isEnabled()
    pane.tools.call_first.setChecked(True)
    assert pane.spec.tool_call_first is True and pane.spec.tool_choice == "required"  # committed as set
    request, _ = conversation.plan_run(pane.spec)
    assert request.tool_call_first is True
    assert decode(encode(loaded_window.session))["panes"][0].tool_call_first is True
    pane.spec.tool_call_first = False  # the spec's value shows (a restore, an undo)
    assert not pane.tools.call_first.isChecked()


def test_the_tool_call_format_is_overridden_per_model_from_the_menu(loaded_window, loop, settings):
    pane = prepare(loaded_window, ["Weather in Paris?"])[0]
    path = loaded_window.bridge.model_info.path
    own = next(a for a in loaded_window.format_menu.tool_actions.actions() if a.data() == "template")
    own.trigger()  # Model → Prompt format → Tool calls → The template's own only
    wait_until(loop, lambda: pane.tools.support.text().startswith("Tools: none:"))
    assert loaded_window.bridge.model_info.tool_format.startswith("none:") and own.isChecked()
    assert settings.tool_format(path) == "template" and settings.tool_format("/elsewhere/other.gguf") == "auto"
