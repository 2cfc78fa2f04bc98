"""How the docks share a window of any size without ever lying over each other or the panes.

Each dock's content sits in a frameless scroll area (`scrolled`), so a dock's minimum size is small: the window's
minimum is never larger than a small screen, and a window squeezed below what a dock's content needs scrolls
that content instead of overlapping its neighbours (QMainWindow overlaps docks when the window is smaller than
its layout's minimum).

MainWindow keeps them readable: side by side, the evaluation (under the panes) and the statistics (at the side) need
the sum of their contents' minimum widths; in a window narrower than that the statistics become a tab beside the
evaluation, under the panes, and go back to the side once the window is wide enough again. The panes keep at least
60 % of the window's width and room for two columns: where the statistics at the side would take more than
SIDE_MOST of it, they become a one-line strip under the panes (or, with the evaluation shown, a tab beside it).
It only moves what it moved itself: a layout the user arranged is left alone. When the window gets lower, the
evaluation gives back what it holds above its share of the height (`bottom_height`), so the panes keep a useful strip.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDockWidget, QFrame, QScrollArea, QWidget

SEPARATOR_PX = 12  # the splitter between two dock areas, with the docks' frames
BOTTOM_SHARE = 0.62  # of the window's height for the evaluation when it opens,
PANES_KEEP_PX = 340  # less what the panes (with the menu, tool and status bars) keep in a low window,
BOTTOM_LEAST = 0.3  # but never less than this share
SIDE_MOST = 1 / 3  # of the window's width for a side dock: one that needs more becomes a strip below the panes


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


def side_crowds(window_width: int, side_width: int) -> bool:
    """A side dock `side_width` wide (its content's minimum) would take more than its share of the width."""
    return side_width + SEPARATOR_PX > window_width * SIDE_MOST


def content_of(dock: QDockWidget) -> QWidget:
    widget = dock.widget()
    return widget.widget() if isinstance(widget, QScrollArea) else widget
