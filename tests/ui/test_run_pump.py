"""How often the window applies streamed tokens (app/ui/run_pump.py): less often the more panes stream, since
every pump repaints each streaming pane and the GUI thread's time is taken from the model's two cores."""

from app.ui.run_pump import CROWDED_RUNS, FEW_RUNS, FLUSH_MS, FLUSH_MS_CROWD, FLUSH_MS_MANY, flush_ms


def test_the_pump_slows_as_the_panes_streaming_grow():
    assert [flush_ms(n) for n in (1, FEW_RUNS, FEW_RUNS + 1, CROWDED_RUNS, CROWDED_RUNS + 1, 16)] == [
        FLUSH_MS, FLUSH_MS, FLUSH_MS_MANY, FLUSH_MS_MANY, FLUSH_MS_CROWD, FLUSH_MS_CROWD]
    assert FLUSH_MS < FLUSH_MS_MANY < FLUSH_MS_CROWD <= 500  # never slower than 2 Hz: the text still flows
