"""The comparison table's rows as a Qt model: the view asks for the cells it shows, so a refresh of hundreds of
rows costs the rows on screen, not one widget item per cell; a refresh that keeps the rows and columns says
which changed (dataChanged) instead of rebuilding."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt


class RowsModel(QAbstractTableModel):
    def __init__(self, text: Callable[[dict, str], str], parent=None, tip: Callable[[dict, str], str] | None = None):
        """`text(row, column)`: what a cell shows; `tip(row, column)`: its tooltip."""
        super().__init__(parent)
        self._text, self._tip = text, tip
        self.rows: list[dict] = []
        self.columns: tuple[str, ...] = ()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index: QModelIndex, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        if role == Qt.DisplayRole:
            return self._text(row, self.columns[index.column()])
        if role == Qt.UserRole:
            return row["id"]
        if role == Qt.ToolTipRole and self._tip is not None:
            return self._tip(row, self.columns[index.column()]) or None
        return None

    def headerData(self, section: int, orientation, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and orientation == Qt.Horizontal and 0 <= section < len(self.columns):
            return self.columns[section]
        return None

    def show(self, rows: list[dict], columns: tuple[str, ...]) -> bool:
        """Show `rows`; True when the model was reset (other columns or another number of rows)."""
        if columns != self.columns or len(rows) != len(self.rows):
            self.beginResetModel()
            self.rows, self.columns = rows, columns
            self.endResetModel()
            return True
        changed = [r for r, (old, new) in enumerate(zip(self.rows, rows, strict=True)) if old != new]
        self.rows = rows
        if changed:
            self.dataChanged.emit(self.index(changed[0], 0), self.index(changed[-1], len(columns) - 1))
        return False
