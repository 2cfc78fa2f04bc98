"""CellDelegate: how the evaluation matrix paints one variant cell, tinted by its verdict, with its badge, score and
figures, a line with every assertion's result (✓ / ✗, "?" for an unreliable judge's), then as much of its output as
fits (wrapped, never past the cell). A verdict resting on an unreliable judge is neither PASS nor FAIL: its badge
reads UNRELIABLE JUDGE, with a neutral tint, as the summary counts it. It only reads the model's roles (`CELL_ROLE`,
`STATE_ROLE`, `NOTE_ROLE`, `CHECKS_ROLE`); a row's height is `ROW_HEIGHT` pixels unless the user resizes it.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QTextLayout, QTextOption
from PySide6.QtWidgets import QStyle, QStyledItemDelegate

from app.evaluate import CellResult
from app.ui.evaluate.matrix import CELL_ROLE, CHECKS_ROLE, NOTE_ROLE, STATE_ROLE
from app.ui.theme import readable

# verdict -> (badge text, hue); the cell is tinted with the hue at low alpha, so light and dark themes work; the
# badge and coloured text use it fitted by theme.readable (white on the badge, the text on the cell's base)
BADGES = {"pass": ("PASS", "#2e7d32"), "fail": ("FAIL", "#c62828"), "error": ("ERROR", "#ef6c00"),
          "running": ("RUNNING", "#1565c0"), "grading": ("JUDGING", "#6a1b9a"), "pending": ("NOT RUN", "#757575"),
          "waiting": ("WAITING", "#757575"),
          "queued": ("QUEUED", "#757575"), "prefilling": ("PREFILL", "#00838f"),
          "unreliable": ("UNRELIABLE JUDGE", "#6d4c41")}
UNRELIABLE = BADGES["unreliable"]
ROW_HEIGHT = 108
WHITE = QColor("white")


class CellDelegate(QStyledItemDelegate):
    """Paints a variant cell: tint, badge, score, figures, then as much of the output as fits."""

    def paint(self, painter: QPainter, option, index) -> None:
        cell: CellResult | None = index.data(CELL_ROLE)
        if cell is None:
            return super().paint(painter, option, index)
        painter.save()
        painter.setRenderHint(QPainter.Antialiasing)
        widget = option.widget
        style = widget.style() if widget else None
        text, colour = BADGES[index.data(STATE_ROLE) or cell.status]
        tint = QColor(colour)
        tint.setAlpha(28 if cell.finished else 14)
        painter.fillRect(option.rect, tint)
        if style and option.state & QStyle.State_Selected:
            highlight = option.palette.highlight().color()
            highlight.setAlpha(70)
            painter.fillRect(option.rect, highlight)
        rect = option.rect.adjusted(6, 5, -6, -4)
        badge_font = QFont(option.font)
        badge_font.setBold(True)
        badge_font.setPointSizeF(max(6.5, option.font.pointSizeF() * 0.78))
        metrics = QFontMetrics(badge_font)
        badge = QRectF(rect.left(), rect.top(), metrics.horizontalAdvance(text) + 12, metrics.height() + 4)
        path = QPainterPath()
        path.addRoundedRect(badge, 4, 4)
        painter.fillPath(path, readable(colour, WHITE))
        painter.setFont(badge_font)
        painter.setPen(WHITE)
        painter.drawText(badge, Qt.AlignCenter, text)
        painter.setFont(option.font)
        painter.setPen(option.palette.text().color())
        right = []
        if cell.grading is not None and cell.finished:
            right.append(f"score {cell.score:.2f}")
        if cell.generated_tokens:
            right.append(f"{cell.generated_tokens} tok")
        if cell.latency_ms is not None:
            right.append(f"{cell.latency_ms / 1000:.1f} s")
        head = QRectF(badge.right() + 8, badge.top(), rect.right() - badge.right() - 8, badge.height())
        painter.drawText(head, Qt.AlignVCenter | Qt.AlignLeft, "  ·  ".join(right))
        top = badge.bottom() + 4
        results = index.data(CHECKS_ROLE) or []
        if results:  # every assertion's verdict, not only the judge's
            top = self._draw_checks(painter, QRectF(rect.left(), top, rect.width(), 0), results, option)
        bottom = rect.bottom()
        note = index.data(NOTE_ROLE) if cell.output else ""
        if note:  # the verdict's reason on the last line, small and muted
            note_font = QFont(option.font)
            note_font.setItalic(True)
            note_font.setPointSizeF(option.font.pointSizeF() * 0.9)
            note_metrics = QFontMetrics(note_font)
            bottom -= note_metrics.lineSpacing()
            painter.setFont(note_font)
            muted = (option.palette.placeholderText().color() if cell.status == "pass"
                     else readable(colour, option.palette.base().color()))
            if option.state & QStyle.State_Selected:  # red italic over the selection's blue was hard to read
                muted = option.palette.text().color()
            painter.setPen(muted)
            painter.drawText(QRectF(rect.left(), bottom + 1, rect.width(), note_metrics.lineSpacing()),
                             Qt.AlignLeft | Qt.AlignVCenter,
                             note_metrics.elidedText(note, Qt.ElideRight, int(rect.width())))
            painter.setFont(option.font)
        painter.setPen(option.palette.text().color())
        body = QRectF(rect.left(), top, rect.width(), bottom - top)
        shown = index.data(Qt.DisplayRole) or ""
        if not cell.output and cell.error:
            painter.setPen(readable(BADGES["error"][1], option.palette.base().color()))
        elif not cell.finished:  # the badge says whether it waits or will not run: no second word for it here
            painter.setPen(option.palette.placeholderText().color() if cell.status == "pending" else
                           option.palette.text().color())
        self._draw_wrapped(painter, body, shown, option.font)
        painter.restore()

    @staticmethod
    def _draw_checks(painter: QPainter, rect: QRectF, results, option) -> float:
        """One line: each assertion as ✓ type (green), ✗ type (red), ? type (an unreliable judge's); elided at the
        cell's edge. Returns the y below it."""
        font = QFont(option.font)
        font.setPointSizeF(option.font.pointSizeF() * 0.9)
        metrics = QFontMetrics(font)
        painter.setFont(font)
        x, y = rect.left(), rect.top()
        for kind, passed, doubtful in results:
            mark, colour = ("?", UNRELIABLE[1]) if doubtful else ("✓", BADGES["pass"][1]) if passed else (
                "✗", BADGES["fail"][1])
            label = f"{mark} {kind}" + (" (unreliable)" if doubtful else "")
            width = metrics.horizontalAdvance(label)
            if x + width > rect.right():
                painter.setPen(option.palette.text().color())
                painter.drawText(QRectF(x, y, max(0.0, rect.right() - x), metrics.lineSpacing()),
                                 Qt.AlignLeft | Qt.AlignVCenter, "…")
                break
            painter.setPen(readable(colour, option.palette.base().color()))  # legible in light and dark
            painter.drawText(QRectF(x, y, width + 2, metrics.lineSpacing()), Qt.AlignLeft | Qt.AlignVCenter, label)
            x += width + metrics.horizontalAdvance("   ")
        painter.setFont(option.font)
        return y + metrics.lineSpacing() + 2

    @staticmethod
    def _draw_wrapped(painter: QPainter, rect: QRectF, text: str, font: QFont) -> None:
        """Lines of `text` that fit `rect`; the last one elided."""
        metrics = QFontMetrics(font)
        layout = QTextLayout(text, font)
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapAtWordBoundaryOrAnywhere)
        layout.setTextOption(option)
        layout.beginLayout()
        lines, y = [], 0.0
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(rect.width())
            if y + 2 * metrics.lineSpacing() > rect.height():  # the last line that fits: the rest, elided
                rest = text[line.textStart():]
                lines.append((y, metrics.elidedText(" ".join(rest.split()), Qt.ElideRight, int(rect.width()))))
                break
            lines.append((y, text[line.textStart():line.textStart() + line.textLength()]))
            y += metrics.lineSpacing()
        layout.endLayout()
        for top, line_text in lines:
            painter.drawText(QRectF(rect.left(), rect.top() + top, rect.width(), metrics.lineSpacing()),
                             Qt.AlignLeft | Qt.AlignTop, line_text.rstrip())

    def sizeHint(self, option, index) -> QSize:
        return QSize(260, ROW_HEIGHT)
