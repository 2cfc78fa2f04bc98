"""A reasoning pane on the real engine: its thinking streams apart from the answer, then folds; the thinking
switch and budget are pane settings, saved with the session, and a sweep axis.

The model is a GGUF variant of the embedded one whose template opens `<think>` (tests/engine/test_reasoning.py).
"""

import pytest

from app.engine import RequestState
from app.session import sweep
from app.ui import settings as keys
from tests.conftest import TEST_THREADS
from tests.fixtures.gguf_variants import THINKING_TEMPLATE, write_variant
from tests.fixtures.step_gate import EveryStepRendered
from tests.ui.conftest import wait_until


@pytest.fixture
def thinking_window(window, loop, model_path, settings, tmp_path):
    settings.set(keys.SLOTS, 4)
    settings.set(keys.CONTEXT_PER_SLOT, 512)
    settings.set(keys.THREADS, TEST_THREADS)
    variant = write_variant(model_path, tmp_path / "smollm2-think.gguf", THINKING_TEMPLATE)
    assert loop.run_until_complete(window.load_model(str(variant))) is not None
    return window


def test_thinking_streams_apart_then_folds(thinking_window, loop):
    pane = thinking_window.grid.panes[0]
    lockstep = EveryStepRendered(thinking_window, pane)
    pane.prompt.setPlainText("Name a fruit.")
    pane.sampling.temperature.setValue(0.0)
    pane.sampling.max_tokens.setValue(80)
    pane.sampling.thinking.mode.setCurrentIndex(1)  # On
    pane.sampling.thinking.budget.setValue(8)
    assert (pane.spec.thinking, pane.spec.thinking_budget) == (True, 8)  # the form wrote the settings
    seen = []
    original = pane.thinking_view.sync

    def recording_sync(spec):
        original(spec)
        view = pane.thinking_view
        seen.append((view.isVisibleTo(pane), view.toggle.text(), view.text.isVisibleTo(pane),
                     view.text.toPlainText(), spec.result.text))

    pane.thinking_view.sync = recording_sync
    assert pane.run()
    wait_until(loop, lambda: not pane.busy, timeout=120)
    lockstep.close()
    assert pane.state == RequestState.DONE
    live = [s for s in seen if s[1] == "Thinking…"]
    assert live and all(visible and expanded and thought and not answer.strip()
                        for visible, _, expanded, thought, answer in live)  # open, streaming, no answer yet
    result = pane.spec.result
    assert result.reasoning and result.text.strip() and 8 <= result.reasoning_tokens
    visible, caption, expanded, thought, _ = seen[-1]
    assert visible and not expanded and f"{result.reasoning_tokens} tok" in caption and "answer after" in caption
    assert thought == result.reasoning
    shown = pane.output.toPlainText()
    assert shown.rstrip().endswith("Assistant\n" + result.text.strip())  # the answer alone, thinking apart


def test_thinking_off_shows_no_section_and_is_a_sweep_axis(thinking_window, loop):
    base = thinking_window.grid.panes[0]
    base.prompt.setPlainText("Name a fruit.")
    base.sampling.temperature.setValue(0.0)
    base.sampling.max_tokens.setValue(16)
    base.commit_form()
    on, off = sweep.expand(base.spec, {"thinking": ["on", "off"]})
    assert (on.thinking, off.thinking) == (True, False)
    assert on.draft == "Name a fruit."
    thinking_window.controller.add_variants(base.spec, [on, off], run=True)
    panes = [p for p in thinking_window.grid.panes if p.spec is on or p.spec is off]
    assert len(panes) == 2
    wait_until(loop, lambda: not any(p.busy for p in panes), timeout=120)
    by_spec = {p.spec.thinking: p for p in panes}
    thinking = by_spec[True]
    assert thinking.spec.result.reasoning
    thinking_window.grid.reveal(thinking)  # a pane out of sight renders its changes when it is painted again
    wait_until(loop, lambda: thinking.thinking_view.isVisibleTo(thinking), timeout=30)
    assert not by_spec[False].spec.result.reasoning and not by_spec[False].thinking_view.isVisibleTo(by_spec[False])
    assert by_spec[False].spec.result.text.strip()


def test_prompt_as_the_model_sees_it_follows_the_thinking_switch(thinking_window):
    pane = thinking_window.grid.panes[0]
    pane.prompt.setPlainText("Name a fruit.")
    texts = {}
    for index, name in ((1, "on"), (2, "off")):
        pane.sampling.thinking.mode.setCurrentIndex(index)
        view = pane.conversation_menu.show_prompt()
        assert view is not None and view.isVisible()
        texts[name] = view.text.toPlainText()
        view.close()
    assert texts["on"].endswith("<|im_start|>assistant↵\n<think>↵\n")  # special tokens and newlines shown
    assert texts["off"].endswith("<think>↵\n↵\n</think>↵\n↵\n")
    assert "Name a fruit." in texts["on"]
    pane.prompt.setPlainText("")
    pane.spec.backend = "nowhere"
    pane.prompt.setPlainText("Hi")
    assert pane.conversation_menu.show_prompt() is None and "No prompt to show" in pane.status.text()
