"""The evaluation matrix as Qt item models: one row per test case (and repeat), one column per variant.

`EvalTableModel` reads the session's `Evaluation` and keeps no copy of cell state: every `data()` call renders
the `CellResult` as it is now, and the column headers are `stats.column_stats` over the column's cells. It
listens to the evaluation's own events (`evaluation.events.all`: a cell's field, or its result as it streams)
and repaints the cells they name in one batch a few times a second, so a streaming run costs the GUI thread one
repaint per flush, not one per token. Whatever changes a cell (a runner, a resume, a test) is shown.
A verdict that rests on an unreliable judge (app.evaluate.calibration) is marked (`UNRELIABLE_ROLE`), and each
judged column's header gives its judges' calibration scores. `EvalFilter` shows all rows, the failing ones, or
those where variants disagree (app.evaluate.stats), counting verdicts as the summary does.
"""

from __future__ import annotations

import json

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, Signal

from app.evaluate import CellResult, Evaluation, stats
from app.evaluate.calibration import Reliability
from app.session.evaluation import cell_change
from app.session.tool_cards import reply_text, validity
from app.ui.evaluate.notes import case_label, cell_tooltip, checks, cut_short_note, header_lines, preview, verdict_note
from app.ui.widgets.filter_proxy import FilterProxy

CELL_ROLE = Qt.UserRole + 1  # the CellResult of a variant column's index
NOTE_ROLE = Qt.UserRole + 2  # why the cell has its verdict (verdict_note)
STATE_ROLE = Qt.UserRole + 3  # what the badge says: the cell's status, its generation's state while it runs,
# "waiting" for a cell not started yet while the evaluation runs ("pending" is "not run": nothing will run it), or
# "unreliable" for a pass or fail that rests on an unreliable judge (neither a pass nor a fail, as the totals count it)
UNRELIABLE_ROLE = Qt.UserRole + 4  # the calibrations of the unreliable judges the cell's verdict rests on ([]: none)
CHECKS_ROLE = Qt.UserRole + 5  # every assertion's result: [(type, passed, unreliable)]
FLUSH_MS = 150
FILTERS = {"All": None, "Failures": "failures", "Disagreements": "disagreements"}


class EvalTableModel(QAbstractTableModel):
    sig_flushed = Signal()
    """Changed cells were repainted (the view updates its progress and filter)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.evaluation: Evaluation | None = None
        self.running = False  # whether the evaluation runs now (its view says so): its pending cells wait
        self._rows: list[stats.Row] = []
        self._columns: list[stats.Column] | None = None  # header figures, recomputed after changes
        self._reliability: Reliability | None = None  # which verdicts count, recomputed after changes
        self._dirty: set[tuple[int, int]] = set()
        self._timer = QTimer(self, singleShot=True, interval=FLUSH_MS)
        self._timer.timeout.connect(self.flush)

    def set_evaluation(self, evaluation: Evaluation | None) -> None:
        self.beginResetModel()
        if self.evaluation is not None:
            self.evaluation.events.all.disconnect(self._event)
        if evaluation is not None:
            evaluation.events.all.connect(self._event)
        self.evaluation = evaluation
        self._rows = stats.rows(evaluation) if evaluation is not None else []
        self._columns, self._reliability, self._dirty = None, None, set()
        self.endResetModel()

    def set_running(self, running: bool) -> None:
        """A run started or ended: pending cells read "waiting" while it runs, "not run" otherwise."""
        if running != self.running:
            self.running = running
            if self._rows and self.columnCount() > 1:
                self.dataChanged.emit(self.index(0, 1), self.index(len(self._rows) - 1, self.columnCount() - 1))

    # --- changes ------------------------------------------------------------------------------------------------
    def _event(self, info) -> None:
        """An event of the evaluation's: repaint the cell it is about (if any) at the next flush."""
        index = cell_change(info)
        if index is not None and self.evaluation is not None:
            self.mark(self.evaluation.cells[index])
        elif self.evaluation is not None and info.signal.name in ("calibrations", "judge", "variants"):
            for cell in self.evaluation.cells:  # a judge's calibration came in: every verdict may count now (or
                # the variants run elsewhere: the headers say where)
                self.mark(cell)

    def mark(self, cell: CellResult) -> None:
        """Repaint the cell (and the headers) at the next flush."""
        self._dirty.add((cell.repeat * len(self.evaluation.cases) + cell.case, cell.variant + 1))
        if not self._timer.isActive():
            self._timer.start()

    def flush(self) -> None:
        self._timer.stop()
        dirty, self._dirty = self._dirty, set()
        self._columns, self._reliability = None, None
        for row, column in dirty:
            if row < len(self._rows):
                index = self.index(row, column)
                self.dataChanged.emit(index, index)
        if dirty:
            self.headerDataChanged.emit(Qt.Horizontal, 1, self.columnCount() - 1)
        self.sig_flushed.emit()

    # --- reading ------------------------------------------------------------------------------------------------
    def columns(self) -> list[stats.Column]:
        if self._columns is None:
            self._columns = stats.matrix(self.evaluation).columns if self.evaluation is not None else []
        return self._columns

    def reliability(self) -> Reliability:
        if self._reliability is None:
            self._reliability = Reliability(self.evaluation)
        return self._reliability

    def row(self, row: int) -> stats.Row:
        return self._rows[row]

    def cell(self, index: QModelIndex) -> CellResult | None:
        if not index.isValid() or index.column() == 0 or index.row() >= len(self._rows):
            return None
        return self._rows[index.row()].cells[index.column() - 1]

    def rowCount(self, parent=None) -> int:
        return 0 if parent is not None and parent.isValid() else len(self._rows)

    def columnCount(self, parent=None) -> int:
        if parent is not None and parent.isValid() or self.evaluation is None:
            return 0
        return 1 + len(self.evaluation.variants)

    def data(self, index: QModelIndex, role=Qt.DisplayRole):
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        row = self._rows[index.row()]
        if index.column() == 0:
            if role in (Qt.DisplayRole, Qt.ToolTipRole):
                return case_label(self.evaluation, row.case, row.repeat)
            return None
        cell = row.cells[index.column() - 1]
        if role == CELL_ROLE:
            return cell
        waiting = cell.status == "pending" and self.running
        if role == NOTE_ROLE:
            return "" if waiting else verdict_note(cell) or cut_short_note(cell)
        if role == UNRELIABLE_ROLE:
            return self.reliability().doubtful(cell)
        if role == CHECKS_ROLE:
            return checks(cell, self.reliability())
        if role == STATE_ROLE:
            state = cell.result.state.value
            if cell.status == "running" and state in ("queued", "prefilling"):
                return state
            if waiting:
                return "waiting"
            return "unreliable" if self.reliability().unreliable(cell) else cell.status
        if role == Qt.DisplayRole:  # tool calls as calls: name(arguments), with how many validate
            shown = reply_text(cell.result)
            return preview(shown) + self.calls_note(cell) if shown else (cell.error or "")
        if role == Qt.ToolTipRole:
            return cell_tooltip(cell, self.reliability().doubtful(cell)) + self.calls_note(cell)
        if role == Qt.AccessibleTextRole:
            verdict = (f"unreliable (its judge said {cell.status})" if self.reliability().unreliable(cell)
                       else cell.status)
            return f"{verdict}, score {cell.score:.2f}: {preview(cell.output, 80)}"
        return None

    def calls_note(self, cell: CellResult) -> str:
        """"\n2 calls, 1 valid" against the variant's tools ("" without calls); F1 is the tool-call-f1 check's."""
        calls = cell.result.tool_calls
        if not calls:
            return ""
        valid, total = validity(calls, json.dumps(self.evaluation.variants[cell.variant].tools))
        return f"\n{total} call(s), {valid} valid against the variant's tools"

    def headerData(self, section: int, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Vertical:
            return str(section + 1) if role == Qt.DisplayRole else None
        if section == 0:
            return "Test case" if role == Qt.DisplayRole else None
        columns = self.columns()
        if section - 1 >= len(columns):
            return None
        column = columns[section - 1]
        if role == Qt.DisplayRole:
            return "\n".join(header_lines(column))
        if role == Qt.ToolTipRole:
            variant = column.variant
            return (f"{variant.title}\nProvider: {variant.provider_id} on {variant.target.name}\n\n"
                    f"{preview(variant.prompt.raw, 600)}")
        return None

    def flags(self, index: QModelIndex):
        return Qt.ItemIsEnabled | Qt.ItemIsSelectable if index.isValid() else Qt.NoItemFlags


class EvalFilter(FilterProxy):
    """The rows a filter keeps: all, failures (a failed or errored cell) or disagreements (verdicts differ)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.mode: str | None = None

    def set_mode(self, mode: str | None) -> None:
        if mode not in FILTERS.values():
            raise ValueError(f"unknown filter {mode!r}")
        self.refilter(lambda: setattr(self, "mode", mode))

    def filterAcceptsRow(self, source_row: int, _parent) -> bool:
        if self.mode is None:
            return True
        model = self.sourceModel()
        check = stats.failing if self.mode == "failures" else stats.disagreeing
        return check(model.row(source_row), model.reliability())  # as the summary counts: an unreliable judge's
        # verdict is neither a failure nor a disagreement
