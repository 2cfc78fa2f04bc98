"""The evaluation view: the matrix of test cases × variants, its filter, progress with ETA, Stop and Resume.

It renders an `EvalTableModel` (which reads the session's Evaluation) through a delegate that paints each cell's
verdict badge, score and the beginning of its output, tinted by the verdict. It starts nothing itself: Stop,
Resume and a double-clicked cell are signals for EvalTools, which owns the run.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QPainter,
    QPainterPath,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.evaluate import CellResult, stats
from app.ui.eval_model import CELL_ROLE, FILTERS, NOTE_ROLE, STATE_ROLE, EvalFilter, EvalTableModel

# verdict -> (badge text, colour); the cell is tinted with the colour at low alpha, so light and dark themes work
BADGES = {"pass": ("PASS", "#2e7d32"), "fail": ("FAIL", "#c62828"), "error": ("ERROR", "#ef6c00"),
          "running": ("RUNNING", "#1565c0"), "grading": ("JUDGING", "#6a1b9a"), "pending": ("NOT RUN", "#757575"),
          "queued": ("QUEUED", "#757575"), "prefilling": ("PREFILL", "#00838f")}
ROW_HEIGHT = 96


def eta_seconds(done: int, total: int, elapsed_s: float) -> float | None:
    """Time left at the pace so far (None before the first cell finished)."""
    if done <= 0 or elapsed_s <= 0 or done >= total:
        return None if done < total else 0.0
    return elapsed_s / done * (total - done)


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else (
        f"{seconds // 60}:{seconds % 60:02d}")


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
        painter.fillPath(path, QColor(colour))
        painter.setFont(badge_font)
        painter.setPen(QColor("white"))
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
        bottom = rect.bottom()
        note = index.data(NOTE_ROLE) if cell.output else ""
        if note:  # the verdict's reason on the last line, small and muted
            note_font = QFont(option.font)
            note_font.setItalic(True)
            note_font.setPointSizeF(option.font.pointSizeF() * 0.9)
            note_metrics = QFontMetrics(note_font)
            bottom -= note_metrics.lineSpacing()
            painter.setFont(note_font)
            muted = option.palette.placeholderText().color() if cell.status == "pass" else QColor(colour)
            if option.state & QStyle.State_Selected:  # red italic over the selection's blue was hard to read
                muted = option.palette.text().color()
            painter.setPen(muted)
            painter.drawText(QRectF(rect.left(), bottom + 1, rect.width(), note_metrics.lineSpacing()),
                             Qt.AlignLeft | Qt.AlignVCenter,
                             note_metrics.elidedText(note, Qt.ElideRight, int(rect.width())))
            painter.setFont(option.font)
        painter.setPen(option.palette.text().color())
        body = QRectF(rect.left(), badge.bottom() + 4, rect.width(), bottom - badge.bottom() - 4)
        shown = index.data(Qt.DisplayRole) or ""
        if not cell.output and cell.error:
            painter.setPen(QColor(BADGES["error"][1]))
        elif not cell.finished:
            painter.setPen(option.palette.placeholderText().color() if not cell.output else
                           option.palette.text().color())
            shown = shown or ("waiting…" if cell.status == "pending" else "")
        self._draw_wrapped(painter, body, shown, option.font)
        painter.restore()

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


class EvalView(QWidget):
    sig_stop = Signal()
    sig_resume = Signal()
    sig_open_cell = Signal(object)
    """A cell was double-clicked or Enter pressed on it, or "Open as a pane" chosen (its CellResult)."""
    sig_export = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = EvalTableModel(self)
        self.proxy = EvalFilter(self)
        self.proxy.setSourceModel(self.model)
        self.title = QLabel(textFormat=Qt.PlainText)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.filter_buttons = QButtonGroup(self)
        bar = QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(QLabel("Show:"))
        for i, name in enumerate(FILTERS):
            button = QPushButton(name, checkable=True, checked=i == 0, flat=False)
            button.setToolTip({"All": "Every test case", "Failures": "Cases where some variant failed or erred",
                               "Disagreements": "Cases where the variants' verdicts differ"}[name])
            self.filter_buttons.addButton(button, i)
            bar.addWidget(button)
        self.filter_buttons.idClicked.connect(lambda i: self.set_filter(list(FILTERS.values())[i]))
        bar.addSpacing(12)
        self.stop_button = QPushButton("Stop", toolTip="Stop the evaluation; finished cells are kept")
        self.resume_button = QPushButton("Resume", toolTip="Run only the cells that have not finished")
        self.stop_button.clicked.connect(self.sig_stop)
        self.resume_button.clicked.connect(self.sig_resume)
        self.export_button = QPushButton("Export…", toolTip="Write results.json, .csv, .html (one file) or JUnit .xml")
        self.export_button.clicked.connect(self.sig_export)
        bar.addWidget(self.stop_button)
        bar.addWidget(self.resume_button)
        bar.addWidget(self.export_button)
        self.progress = QProgressBar(textVisible=False)  # its count beside it: over the fill it was split in two
        self.progress_text = QLabel(objectName="evalProgressText")
        self.eta = QLabel()
        self.summary = QLabel(textFormat=Qt.PlainText)
        progress_row = QHBoxLayout()
        progress_row.addWidget(self.progress_text)
        progress_row.addWidget(self.progress, 2)
        progress_row.addWidget(self.eta)
        progress_row.addSpacing(12)
        progress_row.addWidget(self.summary, 3)
        self.table = QTableView(wordWrap=True, alternatingRowColors=False, showGrid=True)
        self.table.setModel(self.proxy)
        self.table.setItemDelegate(CellDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectItems)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setVerticalScrollMode(QAbstractItemView.ScrollPerPixel)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollPerPixel)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(ROW_HEIGHT)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
        header = self.table.horizontalHeader()
        header.setDefaultAlignment(Qt.AlignLeft | Qt.AlignVCenter)
        header.setMinimumSectionSize(120)
        self.table.activated.connect(self._activated)  # double-click, or Enter
        self.table.setContextMenuPolicy(Qt.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(bar)
        layout.addLayout(progress_row)
        layout.addWidget(self.table, 1)
        self.empty_note = QLabel(objectName="evalEmptyNote", alignment=Qt.AlignCenter, wordWrap=True)
        layout.addWidget(self.empty_note)
        for signal in (self.proxy.modelReset, self.proxy.layoutChanged, self.proxy.rowsInserted,
                       self.proxy.rowsRemoved):
            signal.connect(self._show_empty_note)
        self._show_empty_note()
        self.model.modelReset.connect(self._layout_columns)
        self.model.sig_flushed.connect(self._flushed)
        self.set_running(False)

    # --- state --------------------------------------------------------------------------------------------------
    def set_filter(self, mode: str | None) -> None:
        self.proxy.set_mode(mode)
        button = self.filter_buttons.button(list(FILTERS.values()).index(mode))
        if not button.isChecked():
            button.setChecked(True)

    def set_running(self, running: bool) -> None:
        evaluation = self.model.evaluation
        left = len(evaluation.unfinished()) if evaluation is not None else 0
        self.stop_button.setEnabled(running)
        self.export_button.setEnabled(evaluation is not None and left < len(evaluation.cells))
        self.resume_button.setEnabled(not running and left > 0)
        self.resume_button.setText(f"Resume ({left} cells)" if left and not running and left < len(
            evaluation.cells) else "Run" if left and not running else "Resume")
        self.refresh()

    def set_eta(self, text: str) -> None:
        self.eta.setText(text)

    def refresh(self) -> None:
        """Progress, summary and title from the evaluation as it is now."""
        evaluation = self.model.evaluation
        if evaluation is None:
            self.title.setText("No evaluation")
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
            self.progress_text.clear()
            self.summary.clear()
            return
        source = evaluation.source.rsplit("/", 1)[-1]
        self.title.setText(" — ".join(t for t in (evaluation.description, source) if t) or "Evaluation")
        total = stats.totals(evaluation)
        self.progress.setRange(0, len(evaluation.cells))
        self.progress.setValue(len(evaluation.cells) - total.pending)
        self.progress_text.setText(f"{self.progress.value()} / {self.progress.maximum()} cells")
        done = total.successes + total.failures + total.errors
        self.summary.setText(f"{total.successes} passed · {total.failures} failed · {total.errors} errors"
                             + (f" · pass rate {100 * total.successes / done:.0f}%" if done else ""))

    def _show_empty_note(self, *_args) -> None:
        """A filter that keeps no case says so, instead of showing an empty table."""
        empty = self.proxy.mode is not None and self.proxy.rowCount() == 0 and self.model.rowCount() > 0
        self.empty_note.setText({"failures": "No failures: no variant failed or erred on any case so far.",
                                 "disagreements": "No disagreements: the variants' verdicts agree on every case "
                                                  "so far."}.get(self.proxy.mode, ""))
        self.empty_note.setVisible(empty)

    def _flushed(self) -> None:
        if self.proxy.mode is not None:
            self.proxy.refilter()
        self.refresh()

    def _layout_columns(self) -> None:
        header = self.table.horizontalHeader()
        if self.model.columnCount() == 0:
            return
        header.setSectionResizeMode(0, QHeaderView.Interactive)
        header.resizeSection(0, 190)
        for column in range(1, self.model.columnCount()):
            header.setSectionResizeMode(column, QHeaderView.Stretch)
        self.refresh()

    def _activated(self, index) -> None:
        cell = self.proxy.data(index, CELL_ROLE)
        if cell is not None:
            self.sig_open_cell.emit(cell)

    def _context_menu(self, point) -> None:
        cell = self.proxy.data(self.table.indexAt(point), CELL_ROLE)
        if cell is None:
            return
        menu = QMenu(self)
        menu.addAction("Open as a pane", lambda: self.sig_open_cell.emit(cell))
        menu.addAction("Copy output", lambda: QGuiApplication.clipboard().setText(cell.output)).setEnabled(
            bool(cell.output))
        menu.popup(self.table.viewport().mapToGlobal(point))

    def visible_cases(self) -> list[int]:
        """The case numbers the filter shows (tests read them)."""
        return [self.model.row(self.proxy.mapToSource(self.proxy.index(r, 0)).row()).case
                for r in range(self.proxy.rowCount())]
