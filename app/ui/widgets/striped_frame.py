"""A pane's frame: the style sheet's rounded box plus a coloured stripe down its left edge that says its run
state at a glance (red for a message shown outside a run)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF
from PySide6.QtGui import QColor, QPainter, QPainterPath
from PySide6.QtWidgets import QFrame

from app.session import RunState

# The coloured stripe down a pane's left edge that says its state at a glance.
STATE_COLORS = {RunState.QUEUED: QColor("#9ca3af"), RunState.PREFILLING: QColor("#f59e0b"),
                RunState.GENERATING: QColor("#3b82f6"), RunState.DONE: QColor("#10b981"),
                RunState.CANCELLED: QColor("#6b7280"), RunState.ERROR: QColor("#ef4444"),
                RunState.INTERRUPTED: QColor("#a855f7")}
STRIPE_PX = 4
CORNER_RADIUS = 8  # QFrame#promptPane's border-radius in style.qss


class StripedFrame(QFrame):
    """Subclasses set `self.spec` (a PaneSpec) and `self._notice`, and call `_update_stripe()` on changes."""

    _painted_color: QColor | None = None  # the stripe's colour when last painted

    def _stripe_color(self) -> QColor | None:
        return STATE_COLORS[RunState.ERROR] if self._notice else STATE_COLORS.get(self.spec.result.state)

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
