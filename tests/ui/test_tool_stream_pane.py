"""Calls in the window as the reply writes them, on the real engine: SmolLM2 carrying Qwen2.5's template (Hermes
`<tool_call>` JSON) with tool choice required, Call first and Parallel calls left at "default" (so the grammar allows
one call after another). The calls are cards while the reply streams (the last one filling in), and a reply stopped
in the middle of its second call keeps its complete calls as cards (not the raw markup)."""

import json

import pytest
from PySide6.QtWidgets import QLabel

from app.session import RunState
from tests.fixtures.step_gate import EveryStepRendered
from tests.ui.conftest import load_window, wait_until
from tests.ui.test_end_to_end import prepare

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
MOCKS = json.dumps({"get_weather": {"result": {"temp_c": 18}}})


@pytest.fixture
def qwen_window(window, loop, qwen_variant, settings):
    return load_window(window, loop, qwen_variant, settings)


def card_texts(pane) -> list[tuple[str, str]]:
    box = pane.tool_cards.cards_box
    cards = [box.itemAt(i).widget() for i in range(box.count())]
    return [(c.findChild(QLabel, "toolCardTitle").text(), c.findChild(QLabel, "toolCardArguments").text())
            for c in cards if c is not None]


def test_calls_stream_as_cards_and_a_stopped_reply_keeps_its_complete_calls(qwen_window, loop):
    pane = prepare(qwen_window, ["What is the weather in Paris?"], max_tokens=400)[0]
    pane.tools.load(json.dumps([WEATHER]), "required", MOCKS)
    pane.tools.call_first.setChecked(True)
    pane.commit_form()
    assert pane.spec.parallel_tool_calls is None and pane.spec.tool_call_first  # "default": several calls allowed
    lockstep = EveryStepRendered(qwen_window, pane)
    seen = []  # (busy, [(title, arguments)]) after each render while the reply runs
    sync = pane.tool_cards.sync

    def recording_sync():
        sync()
        if pane.busy:
            seen.append((pane.tool_cards.isVisible(), card_texts(pane)))

    pane.tool_cards.sync = recording_sync
    assert pane.run()
    writing = lambda: any(len(cards) == 1 and "writing" in cards[0][0] for _, cards in seen)  # noqa: E731
    done_one = lambda: any(cards and "✓ valid" in cards[0][0] for _, cards in seen)  # noqa: E731
    wait_until(loop, lambda: (writing() and done_one()) or not pane.busy, timeout=300)
    pane.stop()  # in the middle of the reply: the next call may be half written
    wait_until(loop, lambda: not pane.busy, timeout=120)
    lockstep.close()
    assert writing() and done_one(), "the call was not shown as a card while it streamed"
    assert all(visible for visible, cards in seen if cards)
    assert pane.state in (RunState.CANCELLED, RunState.DONE)
    cards = card_texts(pane)
    assert cards and all("✓ valid" in title and '"city": "Paris"' in args for title, args in cards)
    assert "<tool_call>" not in pane.output.toPlainText()
    assert pane.spec.turns[-1]["tool_calls"] and pane.tool_cards.continue_button.isEnabled()


def test_continue_under_required_lets_the_follow_up_answer(qwen_window, loop):
    """Required and Call first hold for the turn the user asked; the turn after the tool results is run with tool
    choice auto, so the model may answer with the result (this one does) instead of calling again every round until
    auto-continue's limit."""
    pane = prepare(qwen_window, ["What is the weather in Paris?"], max_tokens=48)[0]
    pane.tools.load(json.dumps([WEATHER]), "required", MOCKS)
    pane.tools.call_first.setChecked(True)
    pane.tools.parallel.setCurrentIndex(pane.tools.parallel.findData(False))  # one call a reply
    pane.commit_form()
    assert pane.run()
    wait_until(loop, lambda: not pane.busy, timeout=120)
    assert pane.spec.turns[-1].get("tool_calls")
    pane.tool_cards.auto_steps.setValue(3)
    pane.tool_cards.continue_button.click()
    wait_until(loop, lambda: pane.tool_cards._loop.done and not pane.busy, timeout=300)
    assert [t["role"] for t in pane.spec.turns] == ["user", "assistant", "tool", "assistant"]
    assert not pane.spec.turns[-1].get("tool_calls") and pane.spec.turns[-1]["content"]  # it answered
    assert pane.tool_cards.note.text() == "auto-continue ended after 1 round(s)"
    assert pane.spec.tool_choice == "required" and pane.spec.tool_call_first  # the pane's settings are kept


def test_auto_continue_stops_at_a_repeated_call(loaded_window, loop):
    """The embedded model (generic JSON format) given its result calls get_weather for Paris again: auto-continue
    stops there, after one round, saying why, instead of feeding it the same result until the step limit."""
    window = loaded_window
    pane = prepare(window, ["What is the weather in Paris?"], max_tokens=48)[0]
    pane.tools.load(json.dumps([WEATHER]), "required", MOCKS)
    pane.tools.call_first.setChecked(True)
    pane.commit_form()
    assert pane.run()
    wait_until(loop, lambda: not pane.busy, timeout=120)
    cards = pane.tool_cards
    cards.auto_steps.setValue(3)
    cards.continue_button.click()
    wait_until(loop, lambda: cards._loop.done and not pane.busy, timeout=300)
    assert [t["role"] for t in pane.spec.turns] == ["user", "assistant", "tool", "assistant"]
    assert cards._loop.rounds == 1 and 'called get_weather({"city": "Paris"}) again' in cards.note.text()
