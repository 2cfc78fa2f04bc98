"""Two runs of the evaluation side by side (app/evaluate/run_history.py): pick any two of its runs; per variant,
the pass rate before and after, the cells that flipped (pass → fail, fail → pass) and the exact McNemar test's
verdict — "No detectable change" when the test cannot tell; then every flipped cell, red for pass → fail and
green for fail → pass. It renders the evaluation's runs and keeps nothing of them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.evaluate import run_history
from app.evaluate.run_compare import Comparison
from app.session.evaluation import Evaluation

VARIANT_COLUMNS = ("Variant", "Pass rate", "Pass → fail", "Fail → pass", "McNemar p", "Verdict")
FLIP_COLUMNS = ("Variant", "Case", "Change", "Why (new run)")
WORSE, BETTER = QColor("#fde2e1"), QColor("#dcfce7")


def _table(columns: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(columns), editTriggers=QTableWidget.NoEditTriggers, alternatingRowColors=True)
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().hide()
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _fill(table: QTableWidget, rows: list[tuple[list[str], QColor | None]]) -> None:
    table.setRowCount(len(rows))
    for r, (values, colour) in enumerate(rows):
        for c, value in enumerate(values):
            item = QTableWidgetItem(value)
            if colour is not None:
                item.setBackground(colour)
            table.setItem(r, c, item)


class RunCompareDialog(QDialog):
    def __init__(self, evaluation: Evaluation, parent: QWidget | None = None):
        super().__init__(parent, windowTitle="Compare runs")
        self.evaluation = evaluation
        self.comparison: Comparison | None = None
        self.old, self.new = QComboBox(), QComboBox()
        for index in range(len(evaluation.runs) + 1):
            for box in (self.old, self.new):
                box.addItem(run_history.run_name(evaluation, index))
        self.old.setAccessibleName("The earlier run")
        self.new.setAccessibleName("The later run")
        picks = QHBoxLayout()
        for text, box in (("Old:", self.old), ("New:", self.new)):
            picks.addWidget(QLabel(text))
            picks.addWidget(box, 1)
        self.variants, self.flips = _table(VARIANT_COLUMNS), _table(FLIP_COLUMNS)
        self.note = QLabel(wordWrap=True, textFormat=Qt.PlainText)
        layout = QVBoxLayout(self)
        layout.addLayout(picks)
        layout.addWidget(self.variants, 1)
        layout.addWidget(QLabel("Flipped cells:"))
        layout.addWidget(self.flips, 2)
        layout.addWidget(self.note)
        self.old.currentIndexChanged.connect(self.refresh)
        self.new.currentIndexChanged.connect(self.refresh)
        self.resize(900, 520)

    def pick(self, old: int, new: int) -> None:
        for box, index in ((self.old, old), (self.new, new)):
            box.blockSignals(True)
            box.setCurrentIndex(index)
            box.blockSignals(False)
        self.refresh()

    def refresh(self) -> None:
        result = self.comparison = run_history.compare_runs(self.evaluation, self.old.currentIndex(),
                                                            self.new.currentIndex())
        rows = []
        for change in result.variants:
            worse = change.verdict(result.alpha) == "significantly worse"
            better = change.verdict(result.alpha) == "significantly better"
            rows.append(([change.variant, run_history.rate_change(change), str(len(change.worse)),
                          str(len(change.better)), f"{change.p_value:.3g}", run_history.verdict(change, result.alpha)],
                         WORSE if worse else BETTER if better else None))
        _fill(self.variants, rows)
        _fill(self.flips, [([variant, old.label, "pass → fail" if old.passed else "fail → pass",
                             new.reason if not new.passed else ""], WORSE if old.passed else BETTER)
                           for variant, old, new in run_history.flips(result)])
        unpaired = result.only_old + result.only_new
        self.note.setText(f"Exact McNemar test per variant on the paired cells, two-sided, at p < {result.alpha:g}."
                          + (f" {unpaired} cell(s) without a partner in the other run are not compared."
                             if unpaired else ""))
