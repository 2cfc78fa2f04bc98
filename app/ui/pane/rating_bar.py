"""Rate a pane's reply (1–5 stars) and note why, next to the streaming outputs; saved and exported with the
session. Each star has an accessible name ("Rate 3 of 5") and says the current rating, since a screen reader
cannot read "★☆"."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QToolButton, QWidget

STARS = 5
NOTE_MIN_WIDTH = 50  # a narrow pane still leaves room to type a word


class RatingBar(QWidget):
    sig_changed = Signal()
    """The rating or the note changed (read them with `rating` / `note`)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.rating: int | None = None
        self.stars = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        for value in range(1, STARS + 1):
            star = QToolButton(text="☆", autoRaise=True, objectName="ratingStar",
                               toolTip=f"Rate {value} of {STARS} (click again to clear)",
                               accessibleName=f"Rate {value} of {STARS}")
            star.setFixedWidth(star.fontMetrics().horizontalAdvance("★") + 8)  # five fit a narrow pane's row
            star.clicked.connect(lambda _=False, v=value: self.set_rating(None if v == self.rating else v))
            layout.addWidget(star)
            self.stars.append(star)
        self.note = QLineEdit(placeholderText="Note on this reply", objectName="ratingNote",
                              accessibleName="Note on this reply")
        self.note.setMinimumWidth(NOTE_MIN_WIDTH)
        self.note.textEdited.connect(lambda _text: self.sig_changed.emit())
        layout.addSpacing(6)
        layout.addWidget(self.note, 1)

    def name_for(self, label: str) -> None:
        """Name the note after its pane (the stars' names say their value)."""
        self.note.setAccessibleName(f"Note on the reply of {label}")

    def focus_chain(self) -> list[QWidget]:
        return [*self.stars, self.note]

    def load(self, rating: int | None, note: str) -> None:
        self._show(rating)
        if self.note.text() != note:
            self.note.setText(note)

    def set_rating(self, rating: int | None) -> None:
        self._show(rating)
        self.sig_changed.emit()

    def _show(self, rating: int | None) -> None:
        self.rating = rating
        state = f"Rated {rating} of {STARS}" if rating else "Not rated"
        for value, star in enumerate(self.stars, start=1):
            star.setText("★" if rating and value <= rating else "☆")
            star.setAccessibleDescription(state)
