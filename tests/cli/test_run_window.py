"""`run` over a long input holds a window of requests, never the input: what bounds its memory at 10,000 lines
(bench --run-memory measures the RSS)."""

import io
from types import SimpleNamespace

from app.bench.run_memory import write_requests
from app.cli.inputs import open_input
from app.cli.interrupt import Interrupt
from app.cli.run import IN_FLIGHT_PER_SLOT, Run, open_backends
from app.engine.limits import PACING, PACING_DEFAULT


class Lines(io.StringIO):
    """The output, counting the result lines written."""

    written = 0

    def write(self, text: str) -> int:
        self.written += text.count("\n")
        return super().write(text)


def test_a_long_input_streams_through_a_window_of_slots_times_in_flight(tmp_path):
    slots, count = 2, 48
    write_requests(tmp_path / "in.jsonl", count)
    items, total, _session = open_input(tmp_path / "in.jsonl")
    out = Lines()
    backends = open_backends(SimpleNamespace(server=None, model=None, slots=slots, mmproj=None))
    outstanding = []  # at each line read: lines read and not yet written, requests the runner and engine hold

    def watched():
        for pulled, item in enumerate(items, start=1):
            stats = backends.main.stats()
            outstanding.append((pulled - 1 - out.written, run.runner.active, stats.active + stats.queued))
            yield item

    try:
        run = Run(backends, watched(), total, None, out, slots, keep=False)
        with Interrupt() as ctrl_c:
            assert run.execute(None, ctrl_c) == 0
    finally:
        backends.close_all()
    window = slots * IN_FLIGHT_PER_SLOT
    assert out.written == count and len(outstanding) == count
    assert max(held for held, _, _ in outstanding) == window - 1  # the window fills, and no further
    assert all(runner <= window - 1 and engine <= window - 1 for _, runner, engine in outstanding), outstanding
    assert run.records == [] and run.runner.active == 0 and not run.in_flight  # nothing kept once written


def test_run_pacing_reaches_the_engine():
    backends = open_backends(SimpleNamespace(server=None, model=None, slots=1, mmproj=None, pacing="fast"))
    try:
        assert backends.main.config.mixed_step_factor == PACING["fast"] != PACING[PACING_DEFAULT]
    finally:
        backends.close_all()
