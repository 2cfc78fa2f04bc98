"""The window's work at scale never holds the GUI thread for long in one go (`bench --panes` times it): checked by
mechanism, never by timing — how many rows the comparison table reads to size its columns, how much sliced work
runs in one event-loop turn, how a session file is decoded."""

from PySide6.QtCore import Qt

from app.session import PaneSpec, RunState, Session
from app.ui.compare import table as compare_table


def test_the_comparison_table_sizes_its_columns_from_a_sample_of_rows_measured_by_their_text(qtbot):
    panes = [PaneSpec(draft=f"question {i}") for i in range(120)]
    for i, pane in enumerate(panes):
        pane.result.stream(text=f"answer number {i} " * (1 + i % 5), state=RunState.DONE)
    session = Session(panes=panes)
    asked = []  # every call of the model's data(): Qt's sizing asked each sized cell for ~10 roles, a call each
    real_data = compare_table.RowsModel.data

    def data(model, index, role=Qt.DisplayRole):
        asked.append(index.row())
        return real_data(model, index, role)

    compare_table.RowsModel.data = data
    try:
        dialog = compare_table.CompareTable(session)  # not shown yet: Qt's own sizing read every row then
    finally:
        compare_table.RowsModel.data = real_data
    qtbot.addWidget(dialog)
    assert dialog.model.rowCount() == 120
    assert len(asked) <= 20  # was ~4,400 at 256 rows (24 rows x 18 columns x 10 roles)
    header = dialog.table.horizontalHeader()
    assert all(dialog.table.columnWidth(c) >= header.sectionSizeHint(c) for c in range(dialog.model.columnCount()))

