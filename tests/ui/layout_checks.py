"""What a user sees of a window's controls, checked: every visible button, field and label lies inside the window
and, in a scroll area, inside the viewport's width (reachable without scrolling sideways), no two sibling
controls overlap, and every control is at least as wide as it needs to show its text (a label's text by its
font's metrics). `problems(window)` lists what fails, one readable line each, so a test shows them all at once."""

from __future__ import annotations

import re

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QComboBox,
    QDockWidget,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QScrollBar,
    QTextEdit,
    QToolButton,
    QWidget,
)

from app.ui.widgets.elided_label import ElidedLabel
from app.ui.widgets.status_line import StatusLine

CONTROLS = (QAbstractButton, QLineEdit, QAbstractSpinBox, QComboBox, QLabel, QPlainTextEdit, QTextEdit,
            QProgressBar, StatusLine)
TAG = re.compile(r"<[^>]+>")


def seen(widget: QWidget, window: QWidget) -> bool:
    """Shown, and not in a dock the user cannot see (a tab behind another, a closed dock)."""
    if not widget.isVisibleTo(window) or not widget.isVisible():
        return False
    parent = widget
    while parent is not None and parent is not window:
        if isinstance(parent, QDockWidget) and (parent.visibleRegion().isEmpty() or parent.isFloating()):
            return False
        parent = parent.parentWidget()
    return True


def controls(window: QWidget) -> list[QWidget]:
    """The visible controls, outermost only (a spin box's line edit is the spin box's)."""
    found = []
    for widget in window.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or isinstance(widget, QScrollBar) or not seen(widget, window):
            continue
        parent = widget.parentWidget()
        inner = False
        while parent is not None and parent is not window:
            if isinstance(parent, (*CONTROLS, QAbstractScrollArea)) and not isinstance(parent, QScrollArea):
                inner = True  # a part of a control, or a widget inside a table or a text view
                break
            parent = parent.parentWidget()
        if not inner and window.isAncestorOf(widget):
            found.append(widget)
    return found


def name(widget: QWidget) -> str:
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    text = TAG.sub("", text) if isinstance(text, str) else ""
    owner = widget.parentWidget()
    where = owner.objectName() or type(owner).__name__ if owner is not None else ""
    return f"{type(widget).__name__} {widget.objectName() or ''}{' ' if widget.objectName() else ''}" \
           f"{text[:30]!r} in {where}"


def rect_in(widget: QWidget, ancestor: QWidget) -> QRect:
    return QRect(widget.mapTo(ancestor, QPoint(0, 0)), widget.size())


def scroll_area_of(widget: QWidget, window: QWidget) -> QScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        if isinstance(parent, QScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


def needs_width(widget: QWidget) -> int:
    """The width the control needs to show itself whole."""
    if isinstance(widget, StatusLine):
        return 0  # wraps: its height is checked instead
    if isinstance(widget, QLabel):
        if isinstance(widget, ElidedLabel) or widget.wordWrap() or not widget.text() or widget.pixmap() is not None:
            return 0  # an elided label shows "…" and its tooltip the whole text, by design
        text = widget.text()
        rich = widget.textFormat() == Qt.RichText or (widget.textFormat() == Qt.AutoText and Qt.mightBeRichText(text))
        if rich:
            return widget.minimumSizeHint().width()
        margins = widget.width() - widget.contentsRect().width() + 2 * widget.margin()
        lines = text.replace("&&", "&").split("\n") if widget.buddy() is None else [text.replace("&", "")]
        return max(widget.fontMetrics().horizontalAdvance(line) for line in lines) + margins
    if isinstance(widget, (QPlainTextEdit, QTextEdit)):
        return 0
    if isinstance(widget, (QPushButton, QToolButton)) and widget.text():
        return min(widget.minimumSizeHint().width(), button_text_width(widget))
    return widget.minimumSizeHint().width()


def button_text_width(button: QAbstractButton) -> int:
    """A push or tool button's text, with its icon or arrow and its menu indicator, and a few pixels of frame
    (a button may be narrower than the style's hint, as long as its text shows)."""
    width = button.fontMetrics().horizontalAdvance(button.text().replace("&&", "\0").replace("&", "")) + 6
    decorated = not button.icon().isNull() or (isinstance(button, QToolButton) and button.arrowType() != Qt.NoArrow)
    if decorated:
        width += button.iconSize().width() + 4
    if button.menu() is not None:
        width += 8  # the menu's arrow
    return width


def text_height(widget: QWidget) -> int:
    """The height `widget.text()` takes, wrapped at words to the widget's width."""
    bounds = QRect(0, 0, widget.width(), 1 << 20)
    text = widget.shown_text() if hasattr(widget, "shown_text") else widget.text()
    return widget.fontMetrics().boundingRect(bounds, Qt.TextWordWrap, text).height()


def problems(window: QMainWindow) -> list[str]:
    found: list[str] = []
    window_rect = window.rect()
    shown = controls(window)
    for widget in shown:
        rect = rect_in(widget, window)
        area = scroll_area_of(widget, window)
        if area is None:
            if not window_rect.contains(rect):
                found.append(f"outside the window: {name(widget)} at {rect.getRect()}")
        else:
            view = rect_in(area.viewport(), window)
            if rect.left() < view.left() or rect.right() > view.right():
                found.append(f"outside its scroll area's width ({area.objectName()}, {view.left()}..{view.right()}):"
                             f" {name(widget)} at x {rect.left()}..{rect.right()}")
            if area.horizontalScrollBar().isVisible():
                found.append(f"scrolls sideways: {area.objectName()}")
        need = needs_width(widget)
        if widget.width() < need:
            found.append(f"cut: {name(widget)} is {widget.width()} px wide, needs {need}")
        if isinstance(widget, StatusLine) and widget.height() < (text := text_height(widget)):
            found.append(f"cut: {name(widget)} shows {widget.height()} px of the {text} its text needs")
    by_parent: dict[int, list[QWidget]] = {}
    for widget in shown:
        by_parent.setdefault(id(widget.parentWidget()), []).append(widget)
    for siblings in by_parent.values():
        for i, widget in enumerate(siblings):
            for other in siblings[i + 1:]:
                if widget.geometry().intersects(other.geometry()):
                    found.append(f"overlap: {name(widget)} {widget.geometry().getRect()} and {name(other)} "
                                 f"{other.geometry().getRect()}")
    return sorted(set(found))
