"""The Evaluation dock's buttons (the filters, Judge, Stop, Run, Run again, Compare runs…, Export…) and the offer to
run providers here wrap onto more rows in a narrow dock: each is in reach with no sideways scrolling, at 800×560
and 1280×800. Echo cells and an unreachable provider: no model needed."""

import pytest
from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QAbstractButton, QScrollArea

from tests.ui.test_eval_elsewhere import CONFIG, no_openai_key  # noqa: F401 (a fixture)
from tests.ui.test_eval_view import ECHO, write_config
from tests.ui.test_window_sizes import settle


def unreachable(window) -> list[str]:
    """The view's visible buttons that lie outside what the dock shows, sideways."""
    area = window.eval_dock.widget()
    assert isinstance(area, QScrollArea)
    viewport = area.viewport()
    shown = QRect(0, 0, viewport.width(), 1 << 20)
    view = window.evals.view
    found = []
    for button in view.findChildren(QAbstractButton):
        if button.isVisible():
            rect = QRect(button.mapTo(viewport, button.rect().topLeft()), button.size())
            if not shown.contains(rect):
                found.append(button.text())
    return found


@pytest.mark.parametrize("width,height", [(800, 560), (1280, 800)])
def test_every_evaluation_button_is_in_reach_without_scrolling_sideways(qtbot, window, tmp_path, width, height):
    config = {**ECHO, "tests": [{"vars": {"word": w}} for w in ("a", "b", "c")]}
    assert window.evals.open_config(write_config(tmp_path, config), run=False)
    settle(qtbot, window, QSize(width, height))
    window.eval_dock.raise_()
    qtbot.waitUntil(lambda: window.evals.view.isVisible())
    view = window.evals.view
    assert view.export_button.isVisible() and view.compare_runs_button.isVisible()
    qtbot.waitUntil(lambda: not unreachable(window))
    assert window.eval_dock.widget().horizontalScrollBar().maximum() == 0
    assert window.evals.open_config(write_config(tmp_path, CONFIG))  # the offer, with its three buttons
    assert view.offer.pending
    qtbot.waitUntil(lambda: view.offer.keep_button.isVisible())
    qtbot.waitUntil(lambda: not unreachable(window))
    assert window.eval_dock.widget().horizontalScrollBar().maximum() == 0
