"""What a user asks to see comes into view: a cell opened as a pane is scrolled to in the grid and focused."""

import yaml
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.session import PaneSpec
from app.ui.evaluate.matrix import CELL_ROLE
from tests.ui.conftest import wait_until

ECHO = {"description": "echo", "prompts": ["Say {{word}}"], "providers": ["echo"],
        "tests": [{"vars": {"word": w}} for w in ("dog", "cat")]}


def test_a_double_clicked_cell_opens_as_a_pane_that_is_scrolled_into_view_and_focused(window, loop, tmp_path, qtbot):
    window.resize(1000, 700)
    window.columns_box.setValue(1)
    for _ in range(6):  # the grid holds more panes than it shows: the new one lands below the fold
        window.controller.add_pane(PaneSpec())
    grid = window.grid
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(ECHO), encoding="utf-8")
    assert window.evals.open_config(path), window.messages
    evaluation = window.session.evaluation
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=30)
    grid.verticalScrollBar().setValue(0)
    table = window.evals.view.table
    index = next(table.model().index(r, c) for r in range(table.model().rowCount())
                 for c in range(1, table.model().columnCount()) if table.model().index(r, c).data(CELL_ROLE))
    rect = table.visualRect(index)
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    view = grid.view_of(window.session.panes[-1])
    assert view is not None and grid.verticalScrollBar().maximum() > 0
    wait_until(loop, lambda: not view.visibleRegion().isEmpty(), timeout=5)
    top = view.mapTo(grid.viewport(), view.rect().topLeft()).y()
    assert 0 <= top < grid.viewport().height()  # its header is on screen, not just a sliver of its bottom
    assert view.isAncestorOf(QApplication.focusWidget())
