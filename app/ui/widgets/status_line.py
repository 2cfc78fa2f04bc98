"""A status line that repaints without re-laying-out its window.

`QLabel.setText()` calls `updateGeometry()`, which invalidates the parent layout unless the label's size is
fixed in both directions. With 16 panes refreshing their figures a few times a second that re-ran the whole
grid's height-for-width layout and repainted it, and on 2 cores the GUI's CPU is the model's CPU: generation
measured ~15% slower. This widget has a fixed height and only calls `update()`, and it fills its own
background, so a repaint stops at it instead of also repainting its (style-sheeted) parent underneath.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

LINES = 2


class StatusLine(QWidget):
    def __init__(self, text: str = "", background: QPalette.ColorRole = QPalette.Window,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._text = text
        self.setBackgroundRole(background)  # match the parent's background: this one is drawn opaque
        self.setAutoFillBackground(True)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.setFixedHeight(self.fontMetrics().lineSpacing() * LINES + 2)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 (Qt naming, a drop-in for QLabel)
        if text != self._text:
            self._text = text
            self.setToolTip(text)
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(200, self.height())

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.PlaceholderText))
        rect = QRect(0, 0, self.width(), self.height())
        painter.drawText(rect, Qt.TextWordWrap | Qt.AlignLeft | Qt.AlignTop, self._text)
