"""Run all over many panes: the panes start a few per event-loop turn (app/ui/widgets/sliced.py), as one run group,
each pane rendered once for all the fields a run's start changes, and Stop all ends the rest of the
submission. Checked by events and counts (a zero budget makes every pane a slice of its own), never by timing."""

import collections

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.session import RunState
from app.ui.pane import grid as grid_module
from app.ui.pane import pane_render
from app.ui.widgets import sliced
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare

PANES = 64


def counted_renders(monkeypatch) -> collections.defaultdict:
    """Each pane's renders (by its spec's number): the fields each one showed."""
    renders: collections.defaultdict = collections.defaultdict(list)
    real = pane_render.render

    def render(pane, dirty):
        renders[pane.spec.number].append(set(dirty))
        real(pane, dirty)

    monkeypatch.setattr(pane_render, "render", render)
    return renders


def zero_timer_ticks() -> tuple[QTimer, list]:
    """A zero timer's ticks: it fires only while the event loop turns."""
    ticks = [0]
    timer = QTimer(interval=0)
    timer.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))
    timer.start()
    return timer, ticks


def test_run_all_over_many_panes_renders_each_once_and_runs_them_all_as_one_group(loaded_window, loop, monkeypatch):
    window = loaded_window
    panes = prepare(window, [f"Say {i}." for i in range(PANES)], max_tokens=1)
    monkeypatch.setattr(sliced, "SLICE_S", 0)
    renders = counted_renders(monkeypatch)
    timer, ticks = zero_timer_ticks()
    seen = []  # the timer's count when each pane's run was submitted
    window.runner.events.started.connect(lambda pane, _result: seen.append(ticks[0]))
    started = window.run_all()
    timer.stop()
    assert started == PANES and len(seen) == PANES
    assert len(set(seen)) >= PANES // 2  # the event loop turned while the panes started, not once at the end
    assert set(renders) == {p.spec.number for p in panes}
    # a run's start changes the conversation, the draft, the versions and the result: one render shows them all
    # (a pane whose one-token reply ended meanwhile renders that later, as the pump applies it)
    starts = {"turns", "draft", "versions", "new result"}
    assert all(shown[0] >= starts and not any(starts <= later for later in shown[1:]) for shown in renders.values())
    assert all(p.state is not RunState.IDLE for p in panes)  # each shows its run (queued or further)
    assert window.statusBar().currentMessage() == f"Started {PANES} pane(s)"
    wait_until(loop, lambda: not any(p.busy for p in panes), timeout=120)
    assert all(p.state is RunState.DONE and p.spec.turns[-1]["role"] == "assistant" for p in panes)


def test_stop_all_ends_a_run_all_that_is_still_starting_its_panes(loaded_window, loop, monkeypatch):
    window = loaded_window
    panes = prepare(window, [f"Count to {i}." for i in range(24)], max_tokens=1)
    monkeypatch.setattr(sliced, "SLICE_S", 0)
    # after the 8th pane's run is submitted, the user presses Stop all (the event loop turns between panes)
    window.runner.events.started.connect(
        lambda *_: window.runner.active == 8 and QTimer.singleShot(0, window.act_stop_all.trigger))
    started = window.run_all()
    assert 8 <= started < 24  # the rest never started
    wait_until(loop, lambda: not any(p.busy for p in panes))
    assert sum(p.state is not RunState.IDLE for p in panes) == started
    assert all(p.spec.draft for p in panes if p.state is RunState.IDLE)  # their messages wait, unsent


def test_many_layout_requests_check_the_column_count_once_per_turn(window, monkeypatch):
    grid = window.grid
    views = [grid.add_pane() for _ in range(12)]
    QApplication.processEvents()
    checks = [0]
    real = grid_module.PaneGrid.shown_columns

    def counting(self):
        checks[0] += 1
        return real.fget(self)

    monkeypatch.setattr(grid_module.PaneGrid, "shown_columns", property(counting))
    for view in views * 10:  # 120 panes' sections shown or hidden in one turn
        view.sig_sections_changed.emit()
    assert checks[0] == 0  # none yet: the check waits for the turn's end
    QApplication.processEvents()
    assert checks[0] == 1
