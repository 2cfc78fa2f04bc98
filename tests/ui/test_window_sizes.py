"""The window at every size, with the Evaluation and statistics docks shown: the window really takes the size
asked (its minimum is not larger), no two visible docks overlap each other or the panes, every dock's content
has at least its minimum size inside its dock (nothing squeezed over its neighbours), the panes keep their two
columns without a sideways scrollbar, and the status bar elides long text with the full text in a tooltip.
Echo cells: no model needed. The screenshots of these sizes are scripts/screenshots.py's `sizes`."""

import pytest
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QAbstractButton, QDockWidget, QLabel

from app.evaluate import read_config
from app.session import PaneSpec, Session
from app.ui.bridge import EngineBridge
from app.ui.window.main_window import MainWindow
from tests.ui.test_eval_view import ECHO

SIZES = [(800, 560), (1280, 800), (1920, 1080)]
LONG = ("SmolLM2-135M-Instruct-Q4_1 · llama · 135M params · Q4_1 · trained ctx 8192 · 4 slots × 2048 · "
        "prompt: chatml · KV f16 · CPU only, no layers offloaded to a GPU in this build")


@pytest.fixture
def eval_window(qtbot, settings, loop, tmp_path):
    evaluation = read_config({**ECHO, "tests": [{"vars": {"word": w}} for w in ("a", "b", "c")]},
                             tmp_path).evaluation()
    session = Session(panes=[PaneSpec(draft="Write a haiku."), PaneSpec(draft="Explain a hash table.")],
                      evaluation=evaluation)
    window = MainWindow(EngineBridge(), settings, session=session, autosave_path=None)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.eval_dock.isVisible() and window.stats_dock.isVisible())
    yield window
    window.close()


def visible_docks(window) -> list[QDockWidget]:
    """Docks the user sees (a tab behind another is "visible" to Qt, moved out of the window)."""
    return [d for d in window.findChildren(QDockWidget)
            if d.isVisible() and not d.isFloating() and not d.visibleRegion().isEmpty()]


def settle(qtbot, window, size: QSize) -> None:
    window.resize(size)
    qtbot.waitUntil(lambda: window.size() == size.expandedTo(window.minimumSize()))  # no larger than asked, if it can
    window.layout().activate()


@pytest.mark.parametrize("width,height", SIZES)
def test_docks_never_overlap_and_their_contents_fit(qtbot, eval_window, width, height):
    window = eval_window
    settle(qtbot, window, QSize(width, height))
    assert window.size() == QSize(width, height), f"minimum {window.minimumSizeHint()}"
    docks = visible_docks(window)
    assert window.eval_dock in docks  # the evaluation is in sight (the statistics may be a tab behind it)
    assert window.stats_dock in docks or window.stats_dock in window.tabifiedDockWidgets(window.eval_dock)
    central = window.centralWidget().geometry()
    for i, dock in enumerate(docks):
        geometry = dock.geometry()
        assert QRect(0, 0, width, height).contains(geometry), dock.objectName()
        assert not geometry.intersects(central), f"{dock.objectName()} {geometry} over the panes {central}"
        for other in docks[i + 1:]:
            assert not geometry.intersects(other.geometry()), f"{dock.objectName()} over {other.objectName()}"
        content = dock.widget()
        assert dock.rect().contains(content.geometry()), dock.objectName()
    # What the user reads in each dock is laid out at its minimum size or more, so no control lies over another
    view, panel = window.evals.view, window.stats_panel
    for widget in (view, panel) if window.stats_dock in docks else (view,):
        assert widget.width() >= widget.minimumSizeHint().width(), type(widget).__name__
        assert widget.height() >= widget.minimumSizeHint().height(), type(widget).__name__
    controls = [w for w in view.children() if isinstance(w, (QAbstractButton, QLabel)) and w.isVisible()]
    rects = [QRect(w.mapTo(view, w.rect().topLeft()), w.size()) for w in controls]
    for i, rect in enumerate(rects):
        assert view.rect().contains(rect), controls[i].text()
        for j in range(i + 1, len(rects)):
            assert not rect.intersects(rects[j]), (controls[i].text(), controls[j].text())
    # The panes keep their columns, with no sideways scrollbar, and a useful height
    grid = window.grid
    qtbot.waitUntil(lambda: not grid.horizontalScrollBar().isVisible())  # once the scroll area has re-laid out
    qtbot.waitUntil(lambda: grid.height() >= min(300, 0.35 * height))


def test_the_status_bar_elides_with_the_full_text_in_a_tooltip(qtbot, eval_window):
    window = eval_window
    settle(qtbot, window, QSize(800, 560))
    label = window.model_status.label
    label.setText(LONG)
    label.setToolTip("where the model is")
    window.statusBar().showMessage("Opened the evaluation “quiz” with 8 test cases × 2 variants; run it with "
                                   "Resume, or double-click a cell to open it as a pane", 8000)
    window.layout().activate()
    bar = window.statusBar()
    assert bar.width() == 800
    message = bar.findChild(QLabel, "statusMessage")
    assert message is not None and message.isVisible()
    for shown in (label, message):
        assert bar.rect().contains(shown.geometry())
        assert shown.minimumSizeHint().width() < shown.fontMetrics().horizontalAdvance(shown.text())
    assert label.elided and label.shown_text().endswith("…") and LONG in label.toolTip()
    assert "where the model is" in label.toolTip()
    assert message.elided and message.toolTip() == bar.currentMessage()
    assert not label.geometry().intersects(message.geometry())
    assert message.width() >= 0.3 * bar.width()  # the model's readout leaves the message room to be read
    window.resize(1920, 1080)
    qtbot.waitUntil(lambda: bar.width() == 1920)
    label.setText(LONG.split(" · prompt")[0])
    qtbot.waitUntil(lambda: not label.elided)  # once the bar has laid the longer hint out
    assert label.toolTip() == "where the model is"  # the tooltip adds only what was cut


def test_a_narrow_window_tabs_the_statistics_and_a_wide_one_puts_them_back_at_the_side(qtbot, eval_window):
    window = eval_window
    settle(qtbot, window, QSize(800, 560))
    qtbot.waitUntil(lambda: window.stats_dock in window.tabifiedDockWidgets(window.eval_dock))
    assert window.dockWidgetArea(window.stats_dock) == Qt.BottomDockWidgetArea
    settle(qtbot, window, QSize(1920, 1080))
    qtbot.waitUntil(lambda: window.dockWidgetArea(window.stats_dock) == Qt.RightDockWidgetArea)
    assert not window.tabifiedDockWidgets(window.eval_dock)
    qtbot.waitUntil(lambda: {window.stats_dock, window.eval_dock} <= set(visible_docks(window)))
    assert window.stats_panel.width() >= window.stats_panel.minimumSizeHint().width()  # no sideways scrolling
