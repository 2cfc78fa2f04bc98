"""A collapsible section: an arrow button that shows or hides its body."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton, QWidget


def collapsible(title: str, body: QWidget, expanded: bool) -> tuple[QToolButton, QWidget]:
    """A collapsible section: an arrow button that shows or hides `body`."""
    toggle = QToolButton()
    toggle.setText(title)
    toggle.setCheckable(True)
    toggle.setChecked(expanded)
    toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
    toggle.setArrowType(Qt.DownArrow if expanded else Qt.RightArrow)
    toggle.setObjectName("sectionToggle")
    body.setVisible(expanded)

    def flip(checked: bool) -> None:
        toggle.setArrowType(Qt.DownArrow if checked else Qt.RightArrow)
        body.setVisible(checked)

    toggle.toggled.connect(flip)
    return toggle, body
