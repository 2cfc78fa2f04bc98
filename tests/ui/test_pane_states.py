"""A pane's status line and the stats panel say the same thing: both come from the requests' states.

Two slots, four panes on the real model, every engine event applied and rendered before the engine goes on
(tests/ui/lockstep.py, so a state shorter than the window's pump still shows, whatever the machine's speed). Before,
a pane read "queued" while its prompt was being decoded (the admission was announced with the end of that step),
so a short prompt never showed "prefilling", and the stats panel already counted its slot in use.
"""

from app.session import RunState
from tests.fixtures.step_gate import EveryStepRendered
from tests.ui.conftest import load_window, wait_until

PROMPTS = ("Name a fruit.", "Name a country.", "Name a colour.", "Name an animal.")


def test_a_pane_reads_prefilling_while_its_prompt_is_decoded_and_agrees_with_the_stats(window, loop, model_path,
                                                                                         settings, qtbot):
    load_window(window, loop, model_path, settings, slots=2)
    window.resize(1920, 1080)  # all four panes in sight: a pane out of sight renders when it is scrolled to
    while len(window.grid.panes) < len(PROMPTS):
        window.grid.add_pane()
    panes = window.grid.panes[:len(PROMPTS)]
    for pane, prompt in zip(panes, PROMPTS, strict=True):
        pane.prompt.setPlainText(prompt)
        pane.sampling.max_tokens.setValue(6)
        pane.sampling.temperature.setValue(0.0)
    qtbot.waitUntil(lambda: not any(pane._scrolled_away() for pane in panes))
    seen = []  # per held event: each pane's status word and state, the stats panel's slots and queue readouts
    stats = window.stats_panel

    def held():
        stats.update_once()
        seen.append(([p.status.text().split(" · ")[0] for p in panes], [p.spec.result.state for p in panes],
                     stats.readouts["slots"].text(), stats.readouts["queued"].text()))

    lockstep = EveryStepRendered(window, *panes, held=held)
    try:
        assert window.run_all() == len(PROMPTS)
        wait_until(loop, lambda: not any(p.busy for p in panes), timeout=120)
    finally:
        lockstep.close()
    assert all(p.state == RunState.DONE for p in panes)
    for shown, states, slots, queued in seen:
        assert shown == [s.value for s in states]  # the status line renders the session's state
        busy = sum(s in (RunState.PREFILLING, RunState.GENERATING) for s in states)
        assert (slots, queued) == (f"{busy} / 2", str(states.count(RunState.QUEUED))), (shown, slots, queued)
    for i in range(len(panes)):
        words = [shown[i] for shown, *_ in seen]
        assert "prefilling" in words and words.index("prefilling") < words.index("generating"), words
