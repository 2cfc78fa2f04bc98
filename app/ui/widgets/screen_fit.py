"""Where the first window goes when no saved geometry says: its default size, shrunk to fit the screen's
available area (the desktop minus panels), centred in it. Without a window manager nothing else places a window,
so a plain resize left it in the screen's corner; with one, the manager may still move it."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QStyle

DEFAULT_SIZE = QSize(1400, 860)
FILL = 0.95  # of the available area at most: room for a title bar and the window's frame


def first_geometry(available: QRect, size: QSize = DEFAULT_SIZE) -> QRect:
    """`size`, bounded by FILL of `available`, centred in `available`."""
    room = QSize(int(available.width() * FILL), int(available.height() * FILL))
    return QStyle.alignedRect(Qt.LeftToRight, Qt.AlignCenter, size.boundedTo(room), available)
