"""A frame with a coloured stripe down its left edge: the style sheet's rounded box, and the stripe in whatever
colour its subclass says (a pane's says its run state at a glance)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF
from PySide6.QtGui import QColor, QPainter, QPainterPath
from PySide6.QtWidgets import QFrame

STRIPE_PX = 4
CORNER_RADIUS = 8  # QFrame#promptPane's border-radius in style.qss


class StripedFrame(QFrame):
    """Subclasses say the stripe's colour (`_stripe_color`, None for no stripe) and call `_update_stripe()` when it
    may have changed."""

    _painted_color: QColor | None = None  # the stripe's colour when last painted

    def _stripe_color(self) -> QColor | None:
        return None

    def _update_stripe(self) -> None:
        # Only the stripe's strip is repainted, and only when its colour changes: a pane's frame is drawn by the
        # style sheet, and streaming panes asked for it at every refresh. (A state-dependent style sheet rule
        # needs a re-polish, which repainted the whole pane and every widget in it at each state change.)
        if self._stripe_color() != self._painted_color:
            self.update(QRect(0, 0, CORNER_RADIUS, self.height()))

    def paintEvent(self, event) -> None:
        super().paintEvent(event)  # the style sheet's rounded frame and background
        color = self._painted_color = self._stripe_color()
        if color is None:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        outline = QPainterPath()
        outline.addRoundedRect(QRectF(self.rect()), CORNER_RADIUS, CORNER_RADIUS)
        painter.setClipPath(outline)
        painter.fillRect(QRect(0, 0, STRIPE_PX, self.height()), color)
