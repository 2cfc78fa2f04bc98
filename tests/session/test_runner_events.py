"""A pump is one change per streaming result, and a run's end is one change too: the runner sets a run's
figures together with its text and state (`PaneResult.stream`, `finish`), so listeners hear one event per result
per steady pump, not one per field, and whatever they read in that event is already up to date. Before this, 16
streaming panes made those per-field relays the largest part of the window's pump."""

from collections import Counter

from app.engine import SamplingParams
from app.session import PaneSpec, RunState, Session, SessionRunner
from tests.conftest import EngineSubmitter

GREEDY = SamplingParams(temperature=0)
LIVE = ("text", "generated_tokens", "decode_tps", "t_last", "ttft_s", "state")


def test_figures_alone_still_announce_themselves_once():
    pane = PaneSpec()
    session = Session(panes=[pane])
    heard = []
    session.events.all.connect(lambda info: heard.append(info.path[-1].attr))
    pane.result.stream(generated_tokens=3, decode_tps=12.5)  # e.g. tokens held back by a stop string
    assert heard == ["decode_tps"]
    assert (pane.result.generated_tokens, pane.result.decode_tps) == (3, 12.5)
    heard.clear()
    pane.result.stream(generated_tokens=3, decode_tps=12.5)  # nothing moved: nothing to say
    assert heard == []
    pane.result.stream(text="Hi", generated_tokens=4)
    assert len(heard) == 1 and pane.result.text == "Hi" and pane.result.generated_tokens == 4


def test_each_steady_pump_is_one_event_per_streaming_pane_with_its_figures_set(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=512)
    panes = [PaneSpec(draft=prompt, sampling=GREEDY, max_tokens=64)
             for prompt in ("Describe a forest in spring.", "Explain how a bicycle works.")]
    session = Session(panes=panes)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    seen: list[tuple[int, tuple]] = []  # (pane index, its live figures as a listener read them in the event)

    def listen(info) -> None:
        if len(info.path) > 2 and info.path[2].attr == "result":
            result = session.panes[info.path[1].index].result
            seen.append((info.path[1].index, tuple(getattr(result, name) for name in LIVE)))

    done_heard = []  # what a listener read when a result said "done"

    def on_done(info) -> None:
        if info.path[-1].attr == "state" and info.args[0] == RunState.DONE:
            result = session.panes[info.path[1].index].result
            done_heard.append((result.text, result.generated_tokens, result.finish_reason, result.decode_tps))

    session.events.all.connect(listen)
    session.events.all.connect(on_done)
    for pane in panes:
        runner.run(pane)
    steady = 0
    while runner.active:
        runner.wait(0.5)
        seen.clear()
        states = [pane.result.state for pane in panes]
        if runner.pump():
            continue  # a run ended: its final figures and the conversation's new turn are changes of their own
        per_pane = Counter(index for index, _ in seen)
        for index, figures in seen:  # every event already carries the pump's final figures
            assert figures == tuple(getattr(panes[index].result, name) for name in LIVE)
        for index, pane in enumerate(panes):
            if pane.result.state == states[index] == RunState.GENERATING and per_pane[index]:
                assert per_pane[index] == 1
                steady += 1
    assert steady >= 4  # the property was checked on real streaming pumps
    assert all(pane.result.state == RunState.DONE and pane.result.generated_tokens > 0 for pane in panes)
    finals = [(p.result.text, p.result.generated_tokens, p.result.finish_reason, p.result.decode_tps) for p in panes]
    assert sorted(done_heard) == sorted(finals)  # "done" was announced once per run, with everything already in
