"""FlowLayout: widgets laid out left to right, wrapping onto another row when the width runs out (Qt's flow layout
example), so a bar of buttons never makes its window wider than its widest button.

Each item takes its size hint's width, cut to the row's width when wider (an ElidedLabel then elides); a row's
leftover width goes to its horizontally expanding items (a progress bar), so one row looks as an QHBoxLayout would.
Items with a height for their width (a word-wrapped label) get it. The layout's minimum width is its widest item's
minimum; its size hint is one row.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = 6, row_spacing: int = 4):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._row_spacing = row_spacing
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    # --- QLayout ----------------------------------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientations:
        return Qt.Orientations(Qt.Horizontal)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._place(rect, move=True)

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._visible():
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def sizeHint(self) -> QSize:
        items = self._visible()
        margins = self.contentsMargins()
        width = sum(item.sizeHint().width() for item in items) + self.spacing() * max(len(items) - 1, 0)
        height = max((item.sizeHint().height() for item in items), default=0)
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    # --- placing ----------------------------------------------------------------------------------------------
    def _visible(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty() or item.widget() is None]

    def _place(self, rect: QRect, move: bool) -> int:
        """Lay the items out in rows within `rect` (when `move`); the height they take."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        rows: list[list[tuple[QLayoutItem, int]]] = [[]]
        used = 0
        for item in self._visible():
            width = min(max(item.sizeHint().width(), item.minimumSize().width()), area.width())
            if rows[-1] and used + self.spacing() + width > area.width():
                rows.append([])
                used = 0
            used += (self.spacing() if rows[-1] else 0) + width
            rows[-1].append((item, width))
        y = area.y()
        for row in rows:
            if not row:
                continue
            left = area.width() - sum(w for _, w in row) - self.spacing() * (len(row) - 1)
            growing = [bool(item.expandingDirections() & Qt.Horizontal) for item, _ in row]
            share = left // sum(growing) if left > 0 and any(growing) else 0
            widths = [w + share * grows for (_, w), grows in zip(row, growing, strict=True)]
            heights = [item.heightForWidth(w) if item.hasHeightForWidth() else item.sizeHint().height()
                       for (item, _), w in zip(row, widths, strict=True)]
            height = max(heights)
            x = area.x()
            for (item, _), width, item_height in zip(row, widths, heights, strict=True):
                if move:
                    top = y + (height - item_height) // 2  # centred in the row, as in a QHBoxLayout
                    item.setGeometry(QRect(QPoint(x, top), QSize(width, item_height)))
                x += width + self.spacing()
            y += height + self._row_spacing
        return y - self._row_spacing - area.y() + margins.top() + margins.bottom() if rows[0] else 0
