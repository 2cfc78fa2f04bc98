"""The quantization ranking: one row per file of a comparison, the reference first, the candidates by mean KLD.

A view of `app.session.quant_ranking`: it re-reads the rows whenever the comparison or the session announces a
change (the panes' decode rates and replies arrive while they run), and shows where the fidelity run is with a
progress bar and a Cancel button. A row selected scrolls the grid to its pane; "Show differences" (or a double
click) opens the diff view of the reference's pane against the candidate's, tinted by KLD.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.models import model_name
from app.models.fit import size_label
from app.session import Session
from app.session.quant_ranking import QuantComparison, RankRow, rank
from app.ui.widgets.live_refresh import follow

COLUMNS = ("model", "file size", "memory", "decode tok/s", "mean KLD", "99% KLD", "same top", "RMS Δp",
           "PPL ratio", "first divergence")
TIPS = {"mean KLD": "KL divergence of the candidate's next-token distribution from the reference's, averaged "
                    "over the reference's reply (teacher-forced; nats). Lower is closer.",
        "99% KLD": "the KLD that 99 % of the tokens stay under: the rare tokens where the candidate goes astray",
        "same top": "how often the candidate's most likely token is the reference's",
        "RMS Δp": "root mean square of the change in the probability of the reference's token",
        "PPL ratio": "perplexity of the candidate over the reference's, on the reference's reply",
        "first divergence": "where the candidate's own greedy reply first leaves the reference's (token number)",
        "memory": "the memory estimate at the window's engine settings (weights, KV cache, buffers)",
        "decode tok/s": "the decode rate of the file's own pane, its last run (panes that ran at the same time "
                        "shared the cores: run them one at a time to compare speeds)"}
PATHS = {"memory": "(the reference and the candidates loaded together)",
         "topk-file": "(one model at a time, the reference's most likely tokens kept in a temporary file: they do "
                      "not fit in memory together)"}
STAGE_TEXT = {"panes": "The panes are running; the measurement starts when the reference's reply is in.",
              "measuring": "Measuring", "done": "Measured", "cancelled": "Cancelled: the figures measured so far stay",
              "error": "The measurement failed"}


def _number(value: float | None, fmt: str) -> str:
    return "–" if value is None else fmt.format(value)


def row_cells(row: RankRow) -> list[str]:
    if row.reference:
        divergence, kld = "reference", ["reference", "–", "–", "–", "–"]
    else:
        divergence = ("…" if row.diverged is None else "identical" if not row.diverged
                      else f"token {row.first_divergence + 1}")
        if row.prompts > 1 and row.diverged is not None:
            divergence += f" ({row.diverged} of {row.prompts} replies differ)"
        kld = [_number(row.kld_mean, "{:.4f}"), _number(row.kld_p99, "{:.4f}"), _number(row.same_top_p, "{:.1f} %"),
               _number(row.rms_dp, "{:.2f} %"), _number(row.ppl_ratio, "{:.4f}")]
    memory = size_label(row.memory_bytes) if row.memory_bytes else "–"
    return [row.name, size_label(row.size_bytes) if row.size_bytes else "missing", memory,
            _number(row.decode_tps, "{:.1f}"), *kld, divergence]


class QuantRanking(QDialog):
    sig_pane_selected = Signal(object)
    """A row was selected: its pane (PaneSpec)."""
    sig_show_diff = Signal(str)
    """Show the diff of this candidate file against the reference."""

    def __init__(self, comparison: QuantComparison, session: Session, memory: Callable[[str], int | None],
                 cancel: Callable[[], None], parent: QWidget | None = None):
        """`memory(path)`: the memory estimate of a file; `cancel()` stops the comparison's runs."""
        super().__init__(parent)
        self.comparison, self.session, self.memory = comparison, session, memory
        self.setWindowTitle(f"Quantizations of {model_name(comparison.reference)}")
        self.resize(1180, 300)
        self.status = QLabel(objectName="quantStatus", wordWrap=True)
        self.progress = QProgressBar(objectName="quantProgress")
        self.cancel_button = QPushButton("Cancel", clicked=cancel)
        self.diff_button = QPushButton("Show differences…", clicked=self._show_diff)
        self.table = QTableWidget(0, len(COLUMNS), objectName="quantTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for i, name in enumerate(COLUMNS):
            self.table.horizontalHeaderItem(i).setToolTip(TIPS.get(name, ""))
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.itemSelectionChanged.connect(self._selected)
        self.table.cellDoubleClicked.connect(lambda _r, _c: self._show_diff())
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.progress)
        top.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(QLabel("Sorted by mean KLD, lowest (closest to the reference) first. Hover a column's "
                                "name for what it measures.", wordWrap=True), 1)
        bottom.addWidget(self.diff_button)
        layout.addLayout(bottom)
        self.rows: list[RankRow] = []
        self.timer = follow(self, self.refresh, session)
        comparison.changed.connect(self.refresh)
        self.finished.connect(lambda _r: comparison.changed.disconnect(self.refresh))
        self.refresh()

    def refresh(self) -> None:
        c = self.comparison
        done, total, doing = c.progress
        text = STAGE_TEXT[c.stage]
        if c.stage == "measuring" and doing:
            text = f"Measuring: {doing}"
        if c.stage == "error":
            text += f": {c.error}"
        if c.report is not None:
            text += " " + PATHS.get(c.report.path, f"({c.report.path})")
            text += "".join(f" · {note}" for note in c.report.notes)
        self.status.setText(text)
        self.progress.setVisible(c.running)
        self.progress.setRange(0, total or 0)
        self.progress.setValue(done)
        self.cancel_button.setVisible(c.running)
        self.rows = rank(c, self.session, self.memory)
        selected = self._selected_path()
        self.table.setRowCount(len(self.rows))
        bold = QFont(self.table.font())
        bold.setBold(True)
        for r, row in enumerate(self.rows):
            for col, text in enumerate(row_cells(row)):
                item = QTableWidgetItem(text)
                item.setToolTip(row.path if col == 0 else "")
                if col:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if row.reference:
                    item.setFont(bold)
                self.table.setItem(r, col, item)
        self.table.horizontalHeader().resizeSections(QHeaderView.ResizeToContents)
        if selected is not None:
            for r, row in enumerate(self.rows):
                if row.path == selected:
                    self.table.selectRow(r)
        self.diff_button.setEnabled(self._selected_path() not in (None, c.reference))

    def _selected_path(self) -> str | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self.rows[rows[0].row()].path if rows and rows[0].row() < len(self.rows) else None

    def _selected(self) -> None:
        path = self._selected_path()
        self.diff_button.setEnabled(path not in (None, self.comparison.reference))
        pane = self.session.pane_by_id(next(iter(self.comparison.panes.get(path or "", [])), ""))
        if pane is not None:
            self.sig_pane_selected.emit(pane)

    def _show_diff(self) -> None:
        path = self._selected_path()
        if path and path != self.comparison.reference:
            self.sig_show_diff.emit(path)
