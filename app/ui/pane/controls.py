"""The row under a pane's editor: Run, Stop, "Drop oldest exchange & retry" (after a context error), the rating
of the reply, and the pane's menu (its folded settings sections, copy the reply).

The menu's section entries mirror the sections' own toggles (checked = open): once a pane has a reply those
toggles hide while their section is closed, and the menu is where the sections are opened from.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QMenu, QPushButton, QToolButton, QVBoxLayout, QWidget

from app.ui.pane.rating_bar import RatingBar

MENU_TEXT = "⚙"


def _compact_button(button: QPushButton) -> QPushButton:
    """A push button that may shrink to its label (the style's minimum of ~80 px crowds a narrow pane)."""
    button.setMinimumWidth(button.fontMetrics().horizontalAdvance(button.text()) + 16)
    return button


class PaneControls(QWidget):
    def __init__(self, sections: list[tuple[str, QToolButton]], parent: QWidget | None = None):
        """`sections`: (menu entry, the section's toggle) for each folded settings section."""
        super().__init__(parent)
        self.run_button = _compact_button(QPushButton(
            "Run", objectName="runButton", toolTip="Send the message, or regenerate the last reply (Ctrl+Enter)"))
        self.stop_button = _compact_button(QPushButton("Stop", toolTip="Stop this pane (Esc)", enabled=False))
        self.drop_button = QPushButton("Drop oldest exchange && retry",
                                       toolTip="Remove the oldest question and its answer, then run again")
        self.rating = RatingBar()
        self.menu_button = QToolButton(text=MENU_TEXT, objectName="paneMenu",
                                       toolTip="This pane's settings (system prompt, sampling, output format) and "
                                               "Copy reply")
        self.menu_button.setPopupMode(QToolButton.InstantPopup)
        self.menu = QMenu(self.menu_button)
        self.menu_button.setMenu(self.menu)
        self.section_actions = []
        for text, toggle in sections:
            action = self.menu.addAction(text)
            action.setCheckable(True)
            action.triggered.connect(lambda _=False, a=action, t=toggle: t.setChecked(a.isChecked()))
            self.section_actions.append((action, toggle))
        self.menu.addSeparator()
        self.copy_action = self.menu.addAction("Copy reply")
        self.menu.aboutToShow.connect(self._sync)
        self._row = QHBoxLayout()
        self._row.setSpacing(4)
        for widget in (self.run_button, self.stop_button, self.drop_button):
            self._row.addWidget(widget)
        self._row.addStretch(1)
        self._row.addWidget(self.menu_button)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self._layout.addLayout(self._row)
        self._in_row: bool | None = None
        self.place_rating()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().resizeEvent(event)
        self.place_rating()

    def place_rating(self) -> None:
        """The rating sits in the row between Stop and the menu when it fits whole, else on a line of its own
        under it (a 180 px column). Only the height changes, so this never feeds back into the width. Called on
        resizes and when Drop shows or hides."""
        buttons = [w for w in (self.run_button, self.stop_button, self.drop_button, self.menu_button)
                   if not w.isHidden()]
        spacing = self._row.spacing()
        needed = sum((w.minimumWidth() or w.minimumSizeHint().width()) + spacing for w in buttons)
        in_row = self.width() >= needed + self.rating.minimumSizeHint().width()
        if in_row == self._in_row:
            return
        self._in_row = in_row
        (self._layout if in_row else self._row).removeWidget(self.rating)
        if in_row:
            self._row.insertWidget(self._row.count() - 1, self.rating, 1)  # before the menu, the stretch's place
            self._row.setStretch(self._row.count() - 3, 0)
        else:
            self._layout.addWidget(self.rating)

    def _sync(self) -> None:
        for action, toggle in self.section_actions:
            action.setChecked(toggle.isChecked())

    def set_sections_enabled(self, enabled: bool) -> None:
        """Columns mode shows no settings: their entries are off there."""
        for action, _toggle in self.section_actions:
            action.setEnabled(enabled)

    def name_for(self, label: str) -> None:
        """Accessible names that say which pane a control belongs to (a window holds many Run buttons)."""
        self.run_button.setAccessibleName(f"Run {label}")
        self.stop_button.setAccessibleName(f"Stop {label}")
        self.drop_button.setAccessibleName(f"Drop the oldest exchange of {label} and retry")
        self.menu_button.setAccessibleName(f"{label} settings menu")
        self.rating.name_for(label)

    def focus_chain(self) -> list[QWidget]:
        """The row's controls in tab order (left to right)."""
        return [self.run_button, self.stop_button, self.drop_button, *self.rating.focus_chain(), self.menu_button]
