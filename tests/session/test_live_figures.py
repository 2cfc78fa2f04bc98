"""A run's live wait and TTFT are the figures it ends with: measured from the same moments as the engine's."""

from app.session import PaneSpec, Session, SessionRunner
from tests.conftest import GREEDY, EngineSubmitter

LONG = "Summarize this list: " + ", ".join(f"item {i} weighs {i * 7 % 13} kg" for i in range(30))


def test_live_wait_and_ttft_match_the_final_ones(make_engine):
    """One slot, two panes: the second waits for the first, then its long prompt is prefilled. Before, the live
    wait ran to the end of the step that admitted and prefilled it (0.24 s → 0.02 s when the run ended)."""
    engine = make_engine(n_slots=1, n_ctx_per_slot=1024)
    panes = [PaneSpec(draft=f"{LONG} Which is heaviest? ({n})", sampling=GREEDY, max_tokens=6) for n in (1, 2)]
    Session(panes=panes)
    runner = SessionRunner(EngineSubmitter(engine))
    events = []
    engine.subscribe(events.append)
    handles = [runner.run(pane) for pane in panes]
    for handle in handles:
        handle.result(timeout=120)
    assert engine.wait_idle(30)
    live = {id(p): {} for p in panes}  # the first live value of each figure, as a pane showed it while busy
    for event in events:  # applied one step at a time, as a pump that keeps up would
        runner.apply(event)
        for pane in panes:
            if pane.result.busy:
                for name in ("queue_wait_s", "ttft_s"):
                    value = getattr(pane.result, name)
                    if value is not None:
                        live[id(pane)].setdefault(name, value)
    for pane in panes:
        assert pane.result.state.value == "done"
        seen = live[id(pane)]
        assert set(seen) == {"queue_wait_s", "ttft_s"}, seen  # both were shown live
        assert seen["queue_wait_s"] == pane.result.queue_wait_s  # the engine's, exactly
        assert seen["ttft_s"] == pane.result.ttft_s
