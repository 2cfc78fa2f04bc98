"""The row under a pane's editor: Run, Stop, "Drop oldest exchange & retry" (after a context error), the rating
of the reply, and the pane's menu (its folded settings sections, copy the reply).

The menu's section entries mirror the sections' own toggles (checked = open): once a pane has a reply those
toggles hide while their section is closed, and the menu is where the sections are opened from.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QMenu, QPushButton, QToolButton, QWidget

from app.ui.rating_bar import RatingBar

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
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        for widget in (self.run_button, self.stop_button, self.drop_button):
            layout.addWidget(widget)
        layout.addWidget(self.rating, 1)
        layout.addWidget(self.menu_button)

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
