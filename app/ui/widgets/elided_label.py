"""ElidedLabel: one line of plain text that shrinks with its room, cut with "…" instead of mid-word or off the
edge, and whose tooltip then carries the full text (above any tooltip of its own).

`text()` stays the full text; only the painting is elided. Its minimum width is a few characters, so it never
makes its window wider; its size hint is the full text, so it takes that when there is room.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MIN_CHARS = "MMMM…"  # the narrowest it gets


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None, objectName: str = "",
                 mode: Qt.TextElideMode = Qt.ElideRight):
        super().__init__(parent)
        if objectName:
            self.setObjectName(objectName)
        self._mode = mode
        self._detail = ""  # the tooltip given with setToolTip; the full text joins it when elided
        self.setTextFormat(Qt.PlainText)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:
        super().setText(text)
        self._sync_tooltip()

    def setToolTip(self, tip: str) -> None:
        self._detail = tip
        self._sync_tooltip()

    def _room(self) -> int:
        return self.contentsRect().width() - 2 * max(self.indent(), 0) - 2 * self.margin()

    @property
    def elided(self) -> bool:
        """The text does not fit: the label shows its beginning and "…"."""
        return self.fontMetrics().horizontalAdvance(self.text()) > self._room()

    def shown_text(self) -> str:
        """What the label paints."""
        return self.fontMetrics().elidedText(self.text(), self._mode, max(self._room(), 0))

    def _sync_tooltip(self) -> None:
        full = self.text() if self.elided and self.text() else ""
        super().setToolTip("\n\n".join(part for part in (full, self._detail) if part))

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        narrow = self.fontMetrics().horizontalAdvance(MIN_CHARS) + self.width() - self._room()
        return QSize(min(hint.width(), narrow), hint.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._sync_tooltip()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        rect = self.contentsRect().adjusted(self.margin(), self.margin(), -self.margin(), -self.margin())
        self.style().drawItemText(painter, rect, int(self.alignment()) | Qt.TextSingleLine, self.palette(),
                                  self.isEnabled(), self.shown_text(), self.foregroundRole())
