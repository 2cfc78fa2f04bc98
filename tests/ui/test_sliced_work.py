"""Long work on the GUI thread goes in slices with the event loop turning between them (app/ui/widgets/sliced.py):
a sweep adding hundreds of panes, and Open or New replacing hundreds, handle the window's events while they go
on, and the call still returns with all of its work done. Checked by events (a zero timer's ticks seen between
steps, with a zero budget so that every step is a slice of its own), never by timing. Also: the collector never
walks the objects imported before the app started (a full collection of them held the GUI thread ~200 ms)."""

import gc

import pytest
from PySide6.QtCore import QTimer

from app.session import PaneSpec, Session, sweep
from app.ui.widgets import sliced


@pytest.fixture
def ticks(qtbot):
    """How many times a zero timer has fired: it can fire only while the event loop turns."""
    count = [0]
    timer = QTimer(interval=0)
    timer.timeout.connect(lambda: count.__setitem__(0, count[0] + 1))
    timer.start()
    yield count
    timer.stop()


def test_steps_run_in_slices_with_events_between_and_all_done_on_return(qapp, ticks):
    seen = []
    sliced.run_sliced((seen.append(ticks[0]) for _ in range(5)), budget_s=0)
    assert len(seen) == 5 and seen == sorted(seen)
    assert len(set(seen)) >= 4  # the first slice runs at once; the event loop turned between the later ones


def test_the_windows_timers_tick_between_every_two_slices_and_a_generators_value_is_returned(qapp, ticks):
    seen = []

    def steps():
        for _ in range(6):
            seen.append(ticks[0])
            yield
        return "report"

    assert sliced.run_sliced(steps(), budget_s=0) == "report"
    assert len(set(seen)) == 6  # a timer fired between each slice and the next, not every other one


def test_work_that_fits_a_slice_runs_at_once_and_a_failing_step_raises(qapp, ticks):
    seen = []
    sliced.run_sliced((seen.append(ticks[0]) for _ in range(3)), budget_s=60)
    assert seen == [seen[0]] * 3  # one slice, no event loop

    def failing():
        yield
        raise ValueError("step 2 failed")

    with pytest.raises(ValueError, match="step 2 failed"):
        sliced.run_sliced(failing(), budget_s=0)


def test_inside_an_asyncio_task_the_steps_run_at_once(qapp, ticks, loop):
    seen = []

    async def task():
        sliced.run_sliced((seen.append(ticks[0]) for _ in range(3)), budget_s=0)

    loop.run_until_complete(task())
    assert len(seen) == 3 and len(set(seen)) == 1  # no nested event loop stepped other tasks


def test_a_sweep_of_many_panes_keeps_the_event_loop_turning(window, ticks, monkeypatch):
    monkeypatch.setattr(sliced, "SLICE_S", 0)
    source = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
    counts = []  # the session's size each time the event loop turned
    probe = QTimer(interval=0)
    probe.timeout.connect(lambda: counts.append(len(window.session.panes)))
    probe.start()
    specs = sweep.expand(source.spec, {"temperature": [0.2, 0.5, 0.8, 1.1], "seed": [1, 2, 3, 4]})
    views = window.compare.add_variants(source, specs, run=False)
    probe.stop()
    start = window.session.panes.index(source.spec) + 1
    assert len(views) == 16 and [v.spec for v in views] == window.session.panes[start:start + 16]
    assert len(set(counts)) >= 8  # events handled while the panes came in, not once at the end
    assert all(view.spec.group == source.spec.group is not None for view in views)


def test_opening_a_session_of_many_panes_keeps_the_event_loop_turning(window, tmp_path, monkeypatch):
    monkeypatch.setattr(sliced, "SLICE_S", 0)
    window.controller.replace(Session(panes=[PaneSpec(draft=f"old {i}") for i in range(12)]))
    path = tmp_path / "many.chorus.json"
    Session(panes=[PaneSpec(draft=f"new {i}") for i in range(20)]).save(path)
    window.files.unsaved = False
    counts, saved = [], []
    probe = QTimer(interval=0)
    probe.timeout.connect(lambda: counts.append(len(window.session.panes)))
    probe.start()
    real_save = window.files.saver.save
    monkeypatch.setattr(window.files.saver, "save", lambda session, *a: saved.append(len(session.panes)) or
                        real_save(session, *a))
    window.files.autosave_ms = 0  # an autosave due at once: it must not save a half-replaced session
    window.files.changed()
    window.files.unsaved = False  # (nothing to ask about before replacing it)
    assert window.files.open(str(path))
    probe.stop()
    assert [p.draft for p in window.session.panes] == [f"new {i}" for i in range(20)]
    assert len(set(counts)) >= 10  # events handled while panes left and came
    assert saved and set(saved) <= {12, 20}  # before, or once all of the new session is in
    assert window.grid.panes and len(window.grid.panes) == 20


def test_the_objects_imported_before_the_app_starts_are_frozen_out_of_the_collector(qapp, monkeypatch):
    from app.ui import application, heap

    monkeypatch.setattr(heap, "_frozen", False)
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))  # not this test process's objects
    assert application.create_app() is qapp
    assert frozen == [True]
    application.create_app()
    assert frozen == [True]  # once per process


def test_a_job_given_again_as_a_bound_method_is_queued_once(qapp, qtbot):
    """The grid hands its build step over each time a pane is painted before it is built: a bound method, made
    anew on every access, so an identity check queued it once per painted pane."""

    class Builder:
        def __init__(self):
            self.left, self.calls = 3, 0

        def build_one(self) -> bool:
            self.calls += 1
            self.left -= 1
            return self.left > 0

    builder = Builder()
    for _ in range(5):
        sliced.share_turns(builder.build_one)
    assert sum(job.step == builder.build_one for job in sliced._turns.jobs) == 1
    qtbot.waitUntil(lambda: builder.left == 0)
    assert builder.calls == 3
