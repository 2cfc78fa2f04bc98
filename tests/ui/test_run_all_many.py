"""Run all over many panes, and the grid under it: the grid works out its column count once per event-loop turn
however many panes changed their layouts. Checked by counts, never by timing."""

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from app.ui.pane import grid as grid_module


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
    for view in views * 10:  # 120 panes' layouts changed in one turn (sections shown or hidden)
        QApplication.sendEvent(view, QEvent(QEvent.LayoutRequest))
    assert checks[0] == 0  # none yet: the check waits for the turn's end
    QApplication.processEvents()
    assert checks[0] == 1
