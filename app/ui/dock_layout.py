"""How the docks share a window of any size without ever lying over each other or the panes.

Each dock's content sits in a frameless scroll area (`scrolled`), so a dock's minimum size is small: the window's
minimum is never larger than a small screen, and a window squeezed below what a dock's content needs scrolls
that content instead of overlapping its neighbours (QMainWindow overlaps docks when the window is smaller than
its layout's minimum).

`DockLayout` keeps them readable: side by side, the evaluation (under the panes) and the statistics (at the
side) need the sum of their contents' minimum widths; in a window narrower than that the statistics become a tab
beside the evaluation, under the panes, and go back to the side once the window is wide enough again. It only
moves what it moved itself: a layout the user arranged is left alone. When the window gets lower, the evaluation
gives back what it holds above its share of the height (`bottom_height`), so the panes keep a useful strip.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QFrame, QMainWindow, QScrollArea, QWidget

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


class DockLayout(QObject):
    """Watches `window`'s size and whether `bottom` (the evaluation) is shown; tabs `side` (the statistics) with
    it while the window is too narrow for both side by side. `side_area` is where `side` goes back."""

    def __init__(self, window: QMainWindow, side: QDockWidget, bottom: QDockWidget,
                 side_area=Qt.RightDockWidgetArea):
        super().__init__(window)
        self.window, self.side, self.bottom, self.side_area = window, side, bottom, side_area
        self.tabbed = False  # the statistics are a tab beside the evaluation because the window is narrow
        self._pending = self._resized = False
        window.installEventFilter(self)
        for dock in (side, bottom):
            dock.toggleViewAction().toggled.connect(self.schedule)
            dock.topLevelChanged.connect(self.schedule)

    def needed_width(self) -> int:
        """The narrowest window that shows both docks side by side at their contents' minimum widths."""
        return (content_of(self.bottom).minimumSizeHint().width() + content_of(self.side).minimumSizeHint().width()
                + SEPARATOR_PX)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.window and event.type() in (QEvent.Resize, QEvent.Show):
            self._resized = True
            self.schedule()
        return False

    def schedule(self, *_args) -> None:
        """Re-check once control returns to the event loop, when the window's layout has followed its new size (or
        a dock was shown or hidden, floated or docked): docks resized before that are laid out again."""
        if not self._pending:
            self._pending = True
            QTimer.singleShot(0, self, self.apply)

    def _shown(self, dock: QDockWidget) -> bool:
        return dock.toggleViewAction().isChecked() and not dock.isFloating()

    def apply(self) -> None:
        self._pending = False
        resized, self._resized = self._resized, False
        share = bottom_height(self.window.height())
        both = self._shown(self.side) and self._shown(self.bottom)
        narrow = self.window.width() < self.needed_width()
        if both and narrow and not self.tabbed:
            if self.window.dockWidgetArea(self.side) == self.window.dockWidgetArea(self.bottom):
                return  # the user put them together already
            self.tabbed = True
            self.window.tabifyDockWidget(self.bottom, self.side)
            self.bottom.raise_()
            self.window.resizeDocks([self.bottom], [share], Qt.Vertical)
        elif self.tabbed and (not narrow or not both):
            self.tabbed = False
            self.window.addDockWidget(self.side_area, self.side)  # out of the tabs, back to its side
            self.window.resizeDocks([self.side], [content_of(self.side).minimumSizeHint().width()], Qt.Horizontal)
        below = self.window.dockWidgetArea(self.bottom) == Qt.BottomDockWidgetArea
        if resized and below and self._shown(self.bottom) and self.bottom.height() > share:
            # a lower window takes its height from the panes first (QMainWindow keeps the docks' sizes): the
            # evaluation gives back what it holds above its share
            self.window.resizeDocks([self.bottom], [share], Qt.Vertical)
