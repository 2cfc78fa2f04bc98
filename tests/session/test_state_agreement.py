"""A pane's state and the stats panel's counts are one fact: the states the engine's events carry.

Two slots, four panes on the real model: at every step event, and at every llama_decode between them (where the
engine spends its time, and the window's stats panel may sample), the runs the session holds as queued,
prefilling and generating are the numbers `Engine.stats()` gives (queue, slots in use), and every run goes
queued → prefilling → generating → done, one state per event. Before, a prompt was admitted at the start of the
step that decoded it and announced only when that step ended: during that decode the stats counted the slot in use
while the pane still read "queued", and a prompt prefilled in one step went from "queued" straight to
"generating".
"""

import pytest

from app.session import PaneSpec, RunState, Session, SessionRunner
from tests.conftest import GREEDY, EngineSubmitter

TOPICS = ("owls", "rivers", "glass", "bread")
ORDER = [RunState.QUEUED, RunState.PREFILLING, RunState.GENERATING, RunState.DONE]


def notes(topic: str) -> str:
    lines = " ".join(f"Note {i}: people who study {topic} wrote {i + 2} pages on it." for i in range(6))
    return f"Here are notes about {topic}. {lines} Summarise the notes about {topic}."


def counts(panes) -> tuple[int, int, int]:
    states = [pane.result.state for pane in panes]
    return tuple(states.count(s) for s in (RunState.QUEUED, RunState.PREFILLING, RunState.GENERATING))


@pytest.mark.parametrize("reproducible", [True, False])
def test_pane_states_and_stats_counts_agree_at_every_step_and_decode(make_engine, reproducible):
    engine = make_engine(n_slots=2, n_ctx_per_slot=1024, reproducible=reproducible)
    panes = [PaneSpec(draft=notes(topic), sampling=GREEDY, max_tokens=10) for topic in TOPICS]
    Session(panes=panes)
    runner = SessionRunner(EngineSubmitter(engine))
    events, points = [], []  # points: (events delivered so far, engine.stats() then, where)

    def on_event(event):  # the engine thread, as the window's bridge
        events.append(event)
        points.append((len(events), engine.stats(), "event"))

    real_decode = engine._step.decode

    def decode():  # the engine thread, about to spend a llama_decode's time
        points.append((len(events), engine.stats(), "decode"))
        return real_decode()

    engine._step.decode = decode
    engine.subscribe(on_event)
    with engine._cond:  # all four queued before the engine thread admits any
        handles = [runner.run(pane) for pane in panes]
    for handle in handles:
        assert handle.result(timeout=120).finish_reason == "length"
    assert engine.wait_idle(30)

    history = {id(pane): [pane.result.state] for pane in panes}  # each pane's states, one entry per change
    applied = 0
    for delivered, snap, where in points:  # applied one event at a time, as a pump that keeps up would
        for event in events[applied:delivered]:
            runner.apply(event)
            for pane in panes:
                if history[id(pane)][-1] != pane.result.state:
                    history[id(pane)].append(pane.result.state)
        applied = delivered
        queued, prefilling, generating = counts(panes)
        context = f"at the {where} after {delivered} event(s): session {queued, prefilling, generating}, {snap}"
        assert (snap.queued, snap.slots_busy) == (queued, prefilling + generating), context
        assert (snap.prefilling, snap.generating, snap.active) == (prefilling, generating,
                                                                   prefilling + generating), context
    assert any(where == "decode" and snap.queued == 2 for _, snap, where in points)  # more panes than slots
    assert all(states == ORDER for states in history.values()), history
    assert engine.stats().queued == engine.stats().active == 0
