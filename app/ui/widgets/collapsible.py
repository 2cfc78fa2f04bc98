"""Collapsible sections: an arrow button that shows or hides a body; `LazySection` makes its body only when the
section first opens (or the body is asked for), for a section most users never open."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton, QWidget


def section_toggle(title: str, expanded: bool = False) -> QToolButton:
    """The arrow button of a section (checked = open)."""
    toggle = QToolButton()
    toggle.setText(title)
    toggle.setCheckable(True)
    toggle.setChecked(expanded)
    toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
    toggle.setArrowType(Qt.DownArrow if expanded else Qt.RightArrow)
    toggle.setObjectName("sectionToggle")
    return toggle


def collapsible(title: str, body: QWidget, expanded: bool) -> tuple[QToolButton, QWidget]:
    """A collapsible section: an arrow button that shows or hides `body`."""
    toggle = section_toggle(title, expanded)
    body.setVisible(expanded)

    def flip(checked: bool) -> None:
        toggle.setArrowType(Qt.DownArrow if checked else Qt.RightArrow)
        body.setVisible(checked)

    toggle.toggled.connect(flip)
    return toggle, body


class LazySection:
    """A closed section whose body is made the first time it opens or `body()` is called: `make()` returns the
    body, `place(body)` puts it where it goes (hidden while the section is closed)."""

    def __init__(self, title: str, make: Callable[[], QWidget], place: Callable[[QWidget], None]):
        self.toggle = section_toggle(title)
        self._make, self._place = make, place
        self.widget: QWidget | None = None
        self.toggle.toggled.connect(self._flip)

    @property
    def built(self) -> bool:
        return self.widget is not None

    def body(self) -> QWidget:
        if self.widget is None:
            widget = self._make()
            widget.setVisible(self.toggle.isChecked())
            self.widget = widget
            self._place(widget)
        return self.widget

    def _flip(self, checked: bool) -> None:
        self.toggle.setArrowType(Qt.DownArrow if checked else Qt.RightArrow)
        if checked:
            self.body().setVisible(True)
        elif self.widget is not None:
            self.widget.setVisible(False)
