"""How the docks share a window of any size without ever lying over each other or the panes.

Each dock's content sits in a frameless scroll area (`scrolled`), so a dock's minimum size is small: the window's
minimum is never larger than a small screen, and a window squeezed below what a dock's content needs scrolls
that content instead of overlapping its neighbours (QMainWindow overlaps docks when the window is smaller than
its layout's minimum).

`DockLayout` (a mixin of MainWindow) keeps them readable: side by side, the evaluation (under the panes) and the
statistics (at the side) need the sum of their contents' minimum widths; in a window narrower than that the
statistics become a tab beside the evaluation, under the panes, and go back to the side once the window is wide
enough again. It only moves what it moved itself: a layout the user arranged is left alone. When the window gets
lower, the evaluation gives back what it holds above its share of the height (`bottom_height`), so the panes keep
a useful strip.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QFrame, QScrollArea, QWidget

SEPARATOR_PX = 12  # the splitter between two dock areas, with the docks' frames
BOTTOM_SHARE = 0.62  # of the window's height for the evaluation when it opens,
PANES_KEEP_PX = 340  # less what the panes (with the menu, tool and status bars) keep in a low window,
BOTTOM_LEAST = 0.3  # but never less than this share


def scrolled(content: QWidget) -> QScrollArea:
    """`content` in a frameless scroll area that gives it all its room, and scrolls it only below its minimum."""
    area = QScrollArea(widgetResizable=True, frameShape=QFrame.NoFrame)
    area.setObjectName(f"{content.objectName() or 'dock'}Scroll")
    area.setWidget(content)
    return area


def bottom_height(window_height: int) -> int:
    """The evaluation dock's height when it opens (or takes the statistics in as a tab)."""
    return max(int(window_height * BOTTOM_LEAST), min(int(window_height * BOTTOM_SHARE),
                                                      window_height - PANES_KEEP_PX))


def content_of(dock: QDockWidget) -> QWidget:
    widget = dock.widget()
    return widget.widget() if isinstance(widget, QScrollArea) else widget


class DockLayout:
    """Part of MainWindow (a mixin, as window_actions.py is: it lays out the window's own docks). Watches the
    window's size and whether `bottom` (the evaluation) is shown; tabs `side` (the statistics) with it while the
    window is too narrow for both side by side; `side_area` is where `side` goes back."""

    _side: QDockWidget | None = None  # until _init_dock_layout (the window is resized while it is built)
    _docks_pending = _docks_resized = docks_tabbed = False

    def _init_dock_layout(self, side: QDockWidget, bottom: QDockWidget, side_area=Qt.RightDockWidgetArea) -> None:
        self._side, self._bottom, self._side_area = side, bottom, side_area
        self.docks_tabbed = False  # the statistics are a tab beside the evaluation because the window is narrow
        self._docks_pending = self._docks_resized = False
        for dock in (side, bottom):
            dock.toggleViewAction().toggled.connect(self._schedule_docks)
            dock.topLevelChanged.connect(self._schedule_docks)

    def docks_needed_width(self) -> int:
        """The narrowest window that shows both docks side by side at their contents' minimum widths."""
        return (content_of(self._bottom).minimumSizeHint().width()
                + content_of(self._side).minimumSizeHint().width() + SEPARATOR_PX)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._docks_resized = True
        self._schedule_docks()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._docks_resized = True
        self._schedule_docks()

    def _schedule_docks(self, *_args) -> None:
        """Re-check once control returns to the event loop, when the window's layout has followed its new size (or
        a dock was shown or hidden, floated or docked): docks resized before that are laid out again."""
        if not self._docks_pending:
            self._docks_pending = True
            QTimer.singleShot(0, self, self._apply_docks)

    @staticmethod
    def _shown(dock: QDockWidget) -> bool:
        return dock.toggleViewAction().isChecked() and not dock.isFloating()

    def _apply_docks(self) -> None:
        self._docks_pending = False
        if self._side is None:
            return
        resized, self._docks_resized = self._docks_resized, False
        side, bottom = self._side, self._bottom
        share = bottom_height(self.height())
        both = self._shown(side) and self._shown(bottom)
        narrow = self.width() < self.docks_needed_width()
        if both and narrow and not self.docks_tabbed:
            if self.dockWidgetArea(side) == self.dockWidgetArea(bottom):
                return  # the user put them together already
            self.docks_tabbed = True
            self.tabifyDockWidget(bottom, side)
            bottom.raise_()
            self.resizeDocks([bottom], [share], Qt.Vertical)
        elif self.docks_tabbed and (not narrow or not both):
            self.docks_tabbed = False
            self.addDockWidget(self._side_area, side)  # out of the tabs, back to its side
            self.resizeDocks([side], [content_of(side).minimumSizeHint().width()], Qt.Horizontal)
        below = self.dockWidgetArea(bottom) == Qt.BottomDockWidgetArea
        if resized and below and self._shown(bottom) and bottom.height() > share:
            # a lower window takes its height from the panes first (QMainWindow keeps the docks' sizes): the
            # evaluation gives back what it holds above its share
            self.resizeDocks([bottom], [share], Qt.Vertical)
