"""A pane's message editor that leaves the height to the reply: once the pane has one, the editor is one line
high until it is focused, and its full height while the user writes in it.

Folding changes only the height, never the text (the pane's draft). When a click takes the focus, the fold waits
for the button's release, so the click (onto Run, into the reply) lands where it was aimed before the layout
moves; a focus that leaves otherwise (Tab, a shortcut) folds at once. Losing the focus to a popup or another
window does not fold it. Images pasted or dropped onto it are handed to the pane's attachments (`sig_images`).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QMimeData, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.ui.pane.image_strip import sources

EXPANDED_HEIGHT = 72  # about four lines
RELEASE_POLL_MS = 50  # while a mouse button is held after the focus left


class PromptEditor(QPlainTextEdit):
    sig_images = Signal(list)
    """Images pasted or dropped onto the message: file paths and/or PNG bytes (app/ui/pane/image_strip.py)."""

    def __init__(self, placeholder: str, parent: QWidget | None = None):
        super().__init__(parent, placeholderText=placeholder)
        self.setTabChangesFocus(True)  # Tab walks the pane (editor -> Run -> ...); a prompt rarely needs a tab
        self._foldable = False
        self.folded = False
        self._release = QTimer(self, interval=RELEASE_POLL_MS)
        self._release.timeout.connect(self._fold_if_released)
        self.textChanged.connect(self._typed)
        self._set_folded(False)

    def folded_height(self) -> int:
        margin = math.ceil(self.document().documentMargin())
        return self.fontMetrics().lineSpacing() + 2 * (self.frameWidth() + margin) + 2

    def set_foldable(self, foldable: bool) -> None:
        """Whether the pane has a reply: then the editor folds to a line whenever it is not focused."""
        if foldable == self._foldable:
            return
        self._foldable = foldable
        self._set_folded(foldable and not self.hasFocus())

    def fold(self) -> None:
        """Fold now even if focused (a run just started and its reply needs the room); typing unfolds it."""
        if self._foldable:
            self._set_folded(True)

    def _typed(self) -> None:
        if self.folded and self.hasFocus():
            self._set_folded(False)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802 (Qt)
        return bool(sources(source)) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt): a paste, or a drop
        items = sources(source)
        if items:
            self.sig_images.emit(items)  # images go to the message's attachments, not into its text
        else:
            super().insertFromMimeData(source)

    def focusInEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().focusInEvent(event)
        self._release.stop()
        self._set_folded(False)

    def focusOutEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().focusOutEvent(event)
        if self._foldable and event.reason() not in (Qt.PopupFocusReason, Qt.ActiveWindowFocusReason):
            if event.reason() != Qt.MouseFocusReason:  # Tab, a shortcut, code: no click to let land first
                self._release.stop()
                self._set_folded(True)
                return
            self._fold_if_released()
            if not self.folded:
                self._release.start()

    def _fold_if_released(self) -> None:
        if QGuiApplication.mouseButtons() != Qt.NoButton:
            return  # the click that took the focus is still held: fold once it is released
        self._release.stop()
        if self._foldable and not self.hasFocus():
            self._set_folded(True)

    def _set_folded(self, folded: bool) -> None:
        self.folded = folded
        self.setFixedHeight(self.folded_height() if folded else EXPANDED_HEIGHT)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff if folded else Qt.ScrollBarAsNeeded)
        if folded:
            self.verticalScrollBar().setValue(0)  # its first line shows
