"""The evaluation view: the matrix of test cases × variants, its filter, progress with ETA, Stop and Resume.

It renders an `EvalTableModel` (which reads the session's Evaluation) through eval_cell.py's delegate, which
paints each cell's verdict badge, score and the beginning of its output, tinted by the verdict. It starts nothing
itself: Stop, Resume and a double-clicked cell are signals for EvalTools, which owns the run.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.evaluate import stats
from app.evaluate.calibration import describe, judge_key
from app.ui.evaluate.cell import ROW_HEIGHT, CellDelegate
from app.ui.evaluate.matrix import CELL_ROLE, FILTERS, EvalFilter, EvalTableModel
from app.ui.widgets.flow_layout import FlowLayout


def eta_seconds(done: int, total: int, elapsed_s: float) -> float | None:
    """Time left at the pace so far (None before the first cell finished)."""
    if done <= 0 or elapsed_s <= 0 or done >= total:
        return None if done < total else 0.0
    return elapsed_s / done * (total - done)


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else (
        f"{seconds // 60}:{seconds % 60:02d}")


def judge_label(judge: str) -> str:
    """The evaluation's judge in a few words: the main model, a GGUF's file name, a server's URL."""
    if judge in ("", "local"):
        return "main model"
    return judge if judge.startswith(("http://", "https://")) else judge.replace("\\", "/").rsplit("/", 1)[-1]


class EvalView(QWidget):
    sig_stop = Signal()
    sig_resume = Signal()
    sig_open_cell = Signal(object)
    """A cell was double-clicked or Enter pressed on it, or "Open as a pane" chosen (its CellResult)."""
    sig_export = Signal()
    sig_run_again = Signal()
    """Run every cell again, the run they hold kept as an earlier run (app/session/eval_runs.py)."""
    sig_compare_runs = Signal()

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
        bar = FlowLayout()  # wraps onto more lines in a narrow dock: every button stays in reach
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
        self.judge_button = QToolButton(popupMode=QToolButton.InstantPopup, objectName="evalJudge")
        self.judge_button.setMenu(QMenu(self.judge_button))  # EvalTools fills it: the models that can judge
        self.judge_button.setToolTip("The model that answers llm-rubric, factuality, g-eval and select-best "
                                     "(unless a test names its own); it is calibrated before its verdicts count")
        bar.addWidget(self.judge_button)
        self.stop_button = QPushButton("Stop", toolTip="Stop the evaluation; finished cells are kept")
        self.resume_button = QPushButton("Resume", toolTip="Run only the cells that have not finished")
        self.stop_button.setAccessibleName("Stop the evaluation")
        self.stop_button.clicked.connect(self.sig_stop)
        self.resume_button.clicked.connect(self.sig_resume)
        self.export_button = QPushButton("Export…", toolTip="Write results.json, .csv, .html (one file) or JUnit .xml")
        self.export_button.setAccessibleName("Export the evaluation's results")
        self.export_button.clicked.connect(self.sig_export)
        self.run_again_button = QPushButton("Run again", toolTip="Run every cell again; this run is kept, to "
                                                                  "compare with (Compare runs…)")
        self.run_again_button.clicked.connect(self.sig_run_again)
        self.compare_runs_button = QPushButton("Compare runs…", toolTip="Two runs side by side: the cells that "
                                                                        "flipped and each variant's change")
        self.compare_runs_button.clicked.connect(self.sig_compare_runs)
        bar.addWidget(self.stop_button)
        bar.addWidget(self.resume_button)
        bar.addWidget(self.run_again_button)
        bar.addWidget(self.compare_runs_button)
        bar.addWidget(self.export_button)
        self.progress = QProgressBar(textVisible=False)  # its count beside it: over the fill it was split in two
        self.progress_text = QLabel(objectName="evalProgressText")
        self.eta = QLabel()
        self.summary = QLabel(textFormat=Qt.PlainText, wordWrap=True)  # never wider than the dock
        progress_row = QHBoxLayout()
        progress_row.addWidget(self.progress_text)
        progress_row.addWidget(self.progress, 2)
        progress_row.addWidget(self.eta)
        progress_row.addSpacing(12)
        progress_row.addWidget(self.summary, 3)
        self.table = QTableView(wordWrap=True, alternatingRowColors=False, showGrid=True)
        self.table.setModel(self.proxy)
        self.table.setAccessibleName("Evaluation results: test cases by variants")
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
        begun = evaluation is not None and evaluation.begun  # a run was cut short (Stop, a crash): resume it
        self.resume_button.setText(f"Resume ({left} cells)" if left and not running and begun
                                   else "Run" if left and not running else "Resume")
        self.resume_button.setAccessibleName(f"{self.resume_button.text()} the evaluation")
        self.run_again_button.setEnabled(not running and evaluation is not None and left < len(evaluation.cells))
        self.compare_runs_button.setEnabled(evaluation is not None and bool(evaluation.runs))
        self.model.set_running(running)
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
            self.judge_button.setText(f"Judge: {judge_label('local')}")
            return
        source = evaluation.source.rsplit("/", 1)[-1]
        self.title.setText(" — ".join(t for t in (evaluation.description, source) if t) or "Evaluation")
        total = stats.totals(evaluation)
        self.progress.setRange(0, len(evaluation.cells))
        self.progress.setValue(len(evaluation.cells) - total.pending)
        self.progress_text.setText(f"{self.progress.value()} / {self.progress.maximum()} cells")
        done = total.successes + total.failures + total.errors + total.unreliable
        self.summary.setText(f"{total.successes} passed · {total.failures} failed · {total.errors} errors"
                             + (f" · {total.unreliable} unreliable" if total.unreliable else "")
                             + (f" · pass rate {100 * total.successes / done:.0f}%" if done else ""))
        self.summary.setToolTip("\n".join(["Verdicts by an unreliable judge are neither passes nor failures; they "
                                           "count against the pass rate."] + [describe(j) for j in total.judges])
                                if total.unreliable else "")
        names = sorted({c.name for c in evaluation.calibrations if c.judge == judge_key(evaluation, None)})
        self.judge_button.setText(f"Judge: {judge_label(evaluation.judge)}" + (f" ({', '.join(names)})"
                                                                               if names else ""))

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
