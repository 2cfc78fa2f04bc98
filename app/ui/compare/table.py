"""The comparison table: one row per pane (of a group or the whole session), sortable by any column; a row
selected scrolls the grid to its pane; CSV export. When a pane has tools, the tool columns (calls, valid, F1)
come right after *finish*, in sight without scrolling sideways (`table.columns`). Similarity is to a pane's
reply, to any of its versions (the previous one included), or to each pane's own previous (or k-th) version.
The word error rate ("WER", right after *finish* while it is measured) is against each pane's reference text
(set with "Reference text…" for the selected rows, else every row shown) or against a pane's reply; a cell's
tooltip counts the words wrong, or says why it has no rate.

A view of the session: rows come from `app.session.table` (sorting too: `table.sort`, unknown values last), and
the table re-reads them whenever the session announces a change (at most every live_refresh.REFRESH_MS while replies
stream), so it never goes stale while a sweep runs. The "meaning" column comes from the window's Meaning
(embedded on its worker thread; "…" until the vectors are in), which announces its vectors the same way. The
similarity in words is kept per pair of texts, so a refresh works out only the replies that changed; more than
SYNC_PAIRS new pairs at once (a table of hundreds of panes opened, another reference chosen) are worked out a
slice per event-loop turn ("…" until they are in), so the window never stalls for them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.session import PaneSpec, Session, diff, table, versions
from app.session.store import write_atomic
from app.session.word_errors import shown
from app.ui.compare.rows_model import RowsModel
from app.ui.widgets.live_refresh import follow
from app.ui.widgets.sliced import share_turns


def cell_text(value, column: str) -> str:
    if value is None:
        return "–"
    if column in ("similarity", "meaning", "valid"):
        return f"{value * 100:.0f} %"
    if column == "tok/s":
        return f"{value:.1f}"
    if column == table.WER:
        return shown(value)
    return f"{value:.2f}" if isinstance(value, float) else str(value)


SYNC_PAIRS = 16  # new similarity pairs worked out at once on a refresh; more, a slice per event-loop turn
RESIZE_ROWS = 24  # the rows (from the top, as sorted) columns are sized to fit


class CompareTable(QDialog):
    sig_pane_selected = Signal(object)
    """A row was selected: its PaneSpec."""

    def __init__(self, session: Session, focus: PaneSpec | None = None, parent: QWidget | None = None,
                 meaning=None, model_of: Callable[[str], str] | None = None):
        """`focus` preselects its group (and is the first reference); `meaning` is the window's MeaningLink;
        `model_of(backend)` names each pane's model (the "model" column)."""
        super().__init__(parent)
        self.link, self.model_of = meaning, model_of
        self.setWindowTitle("Comparison table")
        self.resize(980, 420)
        self.session = session
        self._similar: dict[tuple[str, str], float] = {}  # (reference text, reply text) -> similarity in words
        self._missing: set[tuple[str, str]] = set()  # asked for by the last rows(), not known
        self._asked: set[tuple[str, str]] = set()  # every pair the last rows() asked for (the others are dropped)
        self._working = False  # pairs are queued, worked out a slice per event-loop turn
        self._queue: list[tuple[str, str]] = []
        self.finished.connect(self._stop_working)
        self.sort_column, self.descending = "pane", False
        self.scope = QComboBox()
        self.scope.addItem("Whole session", None)
        if focus is not None and focus.group:
            self.scope.addItem("This pane's group", focus.group)
            self.scope.setCurrentIndex(1)
        self.reference = QComboBox()
        self.version = QComboBox(toolTip="Which of the reference's replies: the shown one, the version before it, "
                                         "or any version")
        self.version.setAccessibleName("Version of the reference")
        self.wer = QComboBox(toolTip="The word error rate's reference: each pane's reference text (a transcript, "
                                     "say) or a pane's reply")
        self.wer.setAccessibleName("Word error rate against")
        self.reference_button = QPushButton("Reference text…", toolTip="The text each reply should be (a clip's "
                                            "transcript): for the selected rows, else every row shown")
        self.columns = table.COLUMNS  # in the order shown: the tool columns near the front when tools are used
        self.model = RowsModel(self._cell_text, self,
                               tip=lambda row, column: row["WER detail"] if column == table.WER else "")
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QTableView.SelectRows)
        self.table.setEditTriggers(QTableView.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSortIndicatorShown(True)
        header.setSectionsClickable(True)
        self.export_button = QPushButton("Export CSV…")
        top = QHBoxLayout()
        for widget in (QLabel("Rows"), self.scope, QLabel("Similarity to"), self.reference, self.version):
            top.addWidget(widget)
        top.addStretch(1)
        top.addWidget(self.export_button)
        second = QHBoxLayout()
        for widget in (QLabel("Word error rate against"), self.wer, self.reference_button):
            second.addWidget(widget)
        second.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(second)
        layout.addWidget(self.table)
        self.meaning_note = QLabel(objectName="meaningNote", wordWrap=True)
        layout.addWidget(self.meaning_note)
        self.refresh_references(focus)
        self.scope.currentIndexChanged.connect(lambda: (self.refresh_references(None), self.refresh()))
        self.reference.currentIndexChanged.connect(lambda: (self.refresh_versions(), self.refresh()))
        self.version.currentIndexChanged.connect(self.refresh)
        self.wer.currentIndexChanged.connect(self.refresh)
        self.reference_button.clicked.connect(self.edit_reference)
        header.sectionClicked.connect(self.sort_by)
        self.table.selectionModel().selectionChanged.connect(self._selected)
        self.export_button.clicked.connect(self.export)
        self._timer = follow(self, self.refresh, session, self.link.meaning if self.link is not None else None)
        self.refresh()

    def specs(self) -> list[PaneSpec]:
        group = self.scope.currentData()
        return [p for p in self.session.panes if group is None or p.group == group]

    def refresh_references(self, focus: PaneSpec | None) -> None:
        self.reference.blockSignals(True)
        self.reference.clear()
        specs = self.specs()
        for spec in specs:
            self.reference.addItem(spec.label, spec.id)
        self.reference.addItem("each pane's own reply", table.OWN)
        if focus in specs:
            self.reference.setCurrentIndex(specs.index(focus))
        self.reference.blockSignals(False)
        self.refresh_versions()
        self.refresh_wer_choices()

    def refresh_wer_choices(self) -> None:
        """Not measured, each pane's reference text, or a pane's reply; the choice kept where it still exists
        (at first: the reference texts when a pane has one)."""
        specs = self.specs()
        keep = self.wer.currentData() if self.wer.count() else (
            table.REFERENCE if any(s.reference.strip() for s in specs) else None)
        self.wer.blockSignals(True)
        self.wer.clear()
        self.wer.addItem("not measured", None)
        self.wer.addItem("each pane's reference text", table.REFERENCE)
        for spec in specs:
            self.wer.addItem(f"{spec.label}'s reply", spec.id)
        self.wer.setCurrentIndex(max(0, self.wer.findData(keep)))
        self.wer.blockSignals(False)

    def wer_reference(self) -> PaneSpec | str | None:
        """What the word error rate is measured against (as table.rows takes it)."""
        chosen = self.wer.currentData()
        return chosen if chosen in (None, table.REFERENCE) else self.session.pane_by_id(chosen)

    def edit_reference(self) -> None:
        """Ask for the reference text of the selected rows (else of every row shown) and set it."""
        panes = self.reference_panes()
        if not panes:
            return
        texts = {p.reference for p in panes}
        whom = panes[0].label if len(panes) == 1 else f"the {len(panes)} panes " + (
            "selected" if self._selected_ids() else "shown")
        note = "" if len(texts) == 1 else "\n(They have different ones now: OK gives them all this one.)"
        text, ok = QInputDialog.getMultiLineText(self, "Reference text", f"The text each reply should be, for "
                                                 f"{whom}; empty: none.{note}",
                                                 texts.pop() if len(texts) == 1 else "")
        if ok:
            self.set_reference(text, panes)

    def reference_panes(self) -> list[PaneSpec]:
        """The panes "Reference text…" sets: those of the selected rows, else every row shown."""
        chosen = self._selected_ids()
        specs = self.specs()
        return [s for s in specs if s.id in chosen] or specs

    def set_reference(self, text: str, panes: list[PaneSpec] | None = None) -> None:
        """Give the panes (the rows `reference_panes` names by default) this reference text, and measure the word
        error rate against the reference texts."""
        for spec in self.reference_panes() if panes is None else panes:
            spec.reference = text
        self.wer.setCurrentIndex(self.wer.findData(table.REFERENCE))
        self.refresh()

    def refresh_versions(self) -> None:
        """The reference's versions (for "each pane's own": the shown reply, the previous version, version k)."""
        chosen = self.reference.currentData()
        spec = self.session.pane_by_id(chosen) if isinstance(chosen, str) and chosen != table.OWN else None
        if spec is not None:
            found = versions.choices(spec)
        else:
            most = max((len(s.versions) for s in self.specs()), default=0)
            found = [("shown reply", None), ("previous version", versions.PREVIOUS)] + [
                (f"version {i + 1}", i) for i in range(most)]
        keep = self.version.currentData()
        self.version.blockSignals(True)
        self.version.clear()
        for text, value in found:
            self.version.addItem(text, value)
        values = [value for _text, value in found]
        self.version.setCurrentIndex(values.index(keep) if keep in values else 0)
        self.version.blockSignals(False)

    def rows(self, complete: bool = False) -> list[dict]:
        """The rows as shown: from the session, sorted by the chosen column (`complete`: every similarity worked
        out now, none left to the worker)."""
        specs = self.specs()
        chosen = self.reference.currentData()
        reference = table.OWN if chosen == table.OWN else next((s for s in specs if s.id == chosen), None)
        meaning = self.link.sync().similarity if self.link is not None else None
        self._missing, self._asked = set(), set()
        found = table.rows(specs, reference, self.version.currentData(), meaning, self.model_of,
                           wer=self.wer_reference(), similar=self._similarity)
        if self._missing and (complete or len(self._missing) <= SYNC_PAIRS):
            self._similar.update(_work_out(self._missing))
            found = table.rows(specs, reference, self.version.currentData(), meaning, self.model_of,
                               wer=self.wer_reference(), similar=self._similarity)
        elif self._missing:
            self._queue[:] = self._missing
            self._working = True
            share_turns(self._work_out_one)
        self._similar = {pair: self._similar[pair] for pair in self._asked if pair in self._similar}  # no others
        return table.sort(found, self.sort_column, self.descending)

    def _similarity(self, a: str, b: str) -> float | None:
        known = self._similar.get((a, b))
        self._asked.add((a, b))
        if known is None:
            self._missing.add((a, b))
        return known

    def _stop_working(self) -> None:
        """Closed: the pairs left are not worked out."""
        self._queue.clear()
        self._working = False

    def _work_out_one(self) -> bool:
        """The next queued pair (the window's sliced work runs a few per event-loop turn: app/ui/widgets/sliced.py);
        once none is left, the table shows them. (On a worker thread, pure Python held the GIL against the GUI
        thread's every Qt call.) False when done."""
        if self._queue:
            a, b = self._queue.pop()
            self._similar[(a, b)] = diff.similarity(a, b)
        if self._queue:
            return True
        if self._working:
            self._working = False
            self.refresh()
        return False

    def sort_by(self, section: int) -> None:
        column = self.columns[section]
        self.descending = not self.descending if column == self.sort_column else False
        self.sort_column = column
        self.refresh()

    def refresh(self) -> None:
        self._timer.stop()
        rows = self.rows()
        selected = self._selected_id()
        columns = self.columns = table.columns(self.specs(), wer=self.wer_reference() is not None)
        reset = self.model.show(rows, columns)
        ids = [row["id"] for row in rows]
        if selected in ids and self._selected_id() != selected:
            self.table.blockSignals(True)
            self.table.selectionModel().blockSignals(True)
            self.table.selectRow(ids.index(selected))
            self.table.selectionModel().blockSignals(False)
            self.table.blockSignals(False)
        order = Qt.DescendingOrder if self.descending else Qt.AscendingOrder
        self.table.horizontalHeader().setSortIndicator(self.columns.index(self.sort_column), order)
        if reset:
            self._size_columns()
        self.meaning_note.setText(self.link.status() if self.link is not None else "")

    def _size_columns(self) -> None:
        """Each column as wide as its header and the text of its cells in the first RESIZE_ROWS rows, measured
        with the table's font. (Qt's resizeColumnsToContents asks the model for every role of each cell it
        sizes, a Python call each: ~4,400 calls and ~35 ms at 256 panes; here one cell's size gives the margins.)"""
        header, model = self.table.horizontalHeader(), self.model
        if not model.rowCount() or not model.columnCount():
            return
        metrics = self.table.fontMetrics()
        first = model.rows[0]
        margin = self.table.sizeHintForIndex(model.index(0, 0)).width() \
            - metrics.horizontalAdvance(self._cell_text(first, model.columns[0]))
        margin += 1 if self.table.showGrid() else 0
        rows = model.rows[:RESIZE_ROWS]
        for number, column in enumerate(model.columns):
            widest = max(metrics.horizontalAdvance(self._cell_text(row, column)) for row in rows)
            header.resizeSection(number, max(header.sectionSizeHint(number), widest + margin))

    def _cell_text(self, row: dict, column: str) -> str:
        if row[column] is None and (column == "meaning" and self._embedding()
                                    or column == "similarity" and self._working):
            return "…"
        return cell_text(row[column], column)

    def cell(self, row: int, column: int) -> str:
        """The text a cell shows."""
        return self.model.index(row, column).data()

    def _embedding(self) -> bool:
        return self.link is not None and self.link.meaning.pending > 0

    def _selected_id(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].data(Qt.UserRole) if rows else None

    def _selected_ids(self) -> set[str]:
        return {index.data(Qt.UserRole) for index in self.table.selectionModel().selectedRows()}

    def _selected(self) -> None:
        spec = self.session.pane_by_id(self._selected_id() or "")
        if spec is not None:
            self.sig_pane_selected.emit(spec)

    def export(self, path: str | None = None) -> Path | None:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export comparison", "comparison.csv", "CSV (*.csv)")
        if not path:
            return None
        write_atomic(path, table.to_csv(self.rows(complete=True)))
        return Path(path)


def _work_out(pairs) -> dict[tuple[str, str], float]:
    return {(a, b): diff.similarity(a, b) for a, b in pairs}
