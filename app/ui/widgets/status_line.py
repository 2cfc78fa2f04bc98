"""A status line that repaints without re-laying-out its window.

`QLabel.setText()` calls `updateGeometry()`, which invalidates the parent layout unless the label's size is
fixed in both directions. With 16 panes refreshing their figures a few times a second that re-ran the whole
grid's height-for-width layout and repainted it, and on 2 cores the GUI's CPU is the model's CPU: generation
measured ~15% slower. This widget has a fixed height and only calls `update()`, and it fills its own
background, so a repaint stops at it instead of also repainting its (style-sheeted) parent underneath.

It is never cut: it takes as many lines as its text needs at its width (at least LINES), wrapping between the
" · " fields rather than inside one, so its height changes (and its window re-lays out) only when the number of
lines does, not with every new figure.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

LINES = 2  # at least
SEPARATOR = " · "
FIELD_CHARS = 32  # a field up to this long is kept on one line (longer text, as an error, wraps at its words)


class StatusLine(QWidget):
    def __init__(self, text: str = "", background: QPalette.ColorRole = QPalette.Window,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._text = text
        self.setBackgroundRole(background)  # match the parent's background: this one is drawn opaque
        self.setAutoFillBackground(True)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.setFixedHeight(self.needed_height())

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 (Qt naming, a drop-in for QLabel)
        if text != self._text:
            self._text = text
            self.setToolTip(text)
            self._fit()
            self.update()

    def shown_text(self) -> str:
        """The text as painted: each short field's spaces are non-breaking, so a line breaks between fields."""
        return SEPARATOR.join(part.replace(" ", "\u00a0") if len(part) <= FIELD_CHARS else part
                              for part in self._text.split(SEPARATOR))

    def needed_height(self, width: int | None = None) -> int:
        """The height the text takes at `width` (the current one), never less than LINES lines."""
        metrics = self.fontMetrics()
        bounds = QRect(0, 0, max(width or self.width(), 1), 1 << 20)
        text = metrics.boundingRect(bounds, Qt.TextWordWrap, self.shown_text()).height() if self._text else 0
        return max(metrics.lineSpacing() * LINES, text) + 2

    def _fit(self) -> None:
        needed = self.needed_height()
        if needed != self.height():
            self.setFixedHeight(needed)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit()

    def sizeHint(self) -> QSize:
        return QSize(200, self.height())

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.PlaceholderText))
        rect = QRect(0, 0, self.width(), self.height())
        painter.drawText(rect, Qt.TextWordWrap | Qt.AlignLeft | Qt.AlignTop, self.shown_text())
