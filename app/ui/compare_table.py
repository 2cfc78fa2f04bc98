"""The comparison table: one row per pane (of a group or the whole session), sortable by any column; a row
selected scrolls the grid to its pane; CSV export. Rows come from `app.session.table`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.session import table
from app.session.store import write_atomic


class _Item(QTableWidgetItem):
    """Sorts by the row's value (numbers as numbers, unknown last), shows it formatted."""

    def __init__(self, value, column: str = ""):
        if value is None:
            text = "–"
        elif column == "similarity":
            text = f"{value * 100:.0f} %"
        elif column == "tok/s":
            text = f"{value:.1f}"
        else:
            text = f"{value:.2f}" if isinstance(value, float) else str(value)
        super().__init__(text)
        self.value = value
        self.setFlags(self.flags() & ~Qt.ItemIsEditable)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        a, b = self.value, getattr(other, "value", None)
        if a is None or b is None:  # unknown values go last whichever the direction
            table = self.tableWidget()
            descending = table is not None and table.horizontalHeader().sortIndicatorOrder() == Qt.DescendingOrder
            return (a is None and b is not None) if descending else (b is None and a is not None)
        if isinstance(a, str) != isinstance(b, str):
            return isinstance(b, str)
        return a < b


class CompareTable(QDialog):
    sig_pane_selected = Signal(object)
    """A row was selected: the pane view to show."""

    def __init__(self, panes, focus=None, parent: QWidget | None = None):
        """`panes()` returns the grid's pane views; `focus` (a view) preselects its group."""
        super().__init__(parent)
        self.setWindowTitle("Comparison table")
        self.resize(980, 420)
        self._panes = panes
        self.scope = QComboBox()
        self.scope.addItem("Whole session", None)
        if focus is not None and focus.spec.group:
            self.scope.addItem("This pane's group", focus.spec.group)
            self.scope.setCurrentIndex(1)
        self.reference = QComboBox()
        self.table = QTableWidget(0, len(table.COLUMNS))
        self.table.setHorizontalHeaderLabels(table.COLUMNS)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSortIndicator(0, Qt.AscendingOrder)  # pane order until a header is clicked
        self.export_button = QPushButton("Export CSV…")
        top = QHBoxLayout()
        for widget in (QLabel("Rows"), self.scope, QLabel("Similarity to"), self.reference):
            top.addWidget(widget)
        top.addStretch(1)
        top.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table)
        self.refresh_references(focus)
        self.scope.currentIndexChanged.connect(lambda: (self.refresh_references(None), self.refresh()))
        self.reference.currentIndexChanged.connect(self.refresh)
        self.table.itemSelectionChanged.connect(self._selected)
        self.export_button.clicked.connect(self.export)
        self.refresh()

    def views(self) -> list:
        group = self.scope.currentData()
        return [p for p in self._panes() if group is None or p.spec.group == group]

    def refresh_references(self, focus) -> None:
        self.reference.blockSignals(True)
        self.reference.clear()
        for view in self.views():
            self.reference.addItem(view.spec.title or f"Pane {view.number}", view.spec.id)  # views can go
        if focus in self.views():
            self.reference.setCurrentIndex(self.views().index(focus))
        self.reference.blockSignals(False)

    def rows(self) -> list[dict]:
        views = self.views()
        reference = next((v.spec for v in views if v.spec.id == self.reference.currentData()), None)
        return table.rows([v.spec for v in views], reference, [v.number for v in views])

    def refresh(self) -> None:
        rows = self.rows()
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, column in enumerate(table.COLUMNS):
                item = _Item(row[column], column)
                item.setData(Qt.UserRole, row["id"])
                self.table.setItem(r, c, item)
        self.table.setSortingEnabled(True)
        header = self.table.horizontalHeader()
        self.table.sortByColumn(max(header.sortIndicatorSection(), 0), header.sortIndicatorOrder())
        self.table.resizeColumnsToContents()

    def _selected(self) -> None:
        items = self.table.selectedItems()
        if items:
            pane_id = items[0].data(Qt.UserRole)
            view = next((v for v in self._panes() if v.spec.id == pane_id), None)
            if view is not None:
                self.sig_pane_selected.emit(view)

    def export(self, path: str | None = None) -> Path | None:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export comparison", "comparison.csv", "CSV (*.csv)")
        if not path:
            return None
        write_atomic(path, table.to_csv(self.rows()))
        return Path(path)
