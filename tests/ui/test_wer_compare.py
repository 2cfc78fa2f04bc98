"""The word error rate in the comparison table (against each pane's reference text, or a pane chosen as the
reference) and in the diff view, re-read as the session changes."""

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QInputDialog

from app.session import PaneResult, PaneSpec, RunState, Session, table
from app.ui.compare.diff_view import DiffDialog
from app.ui.compare.table import CompareTable

REFERENCE = "The quick brown fox jumps over the lazy dog."
REPLIES = ["The quick brown fox jumps over the lazy dog.", "the quick brown fox jumped over the lazy dog",
           "A quick fox jumps over a dog."]


def transcriptions(reference: str = "") -> Session:
    panes = [PaneSpec(title=f"take {i + 1}", group="g", reference=reference,
                      result=PaneResult(state=RunState.DONE, text=text, finish_reason="stop"))
             for i, text in enumerate(REPLIES)]
    return Session(panes=panes)


def column(dialog: CompareTable, name: str) -> list[str]:
    at = dialog.columns.index(name)
    return [dialog.cell(r, at) for r in range(dialog.model.rowCount())]


def test_the_table_measures_against_the_reference_text_it_sets(qtbot, monkeypatch):
    session = transcriptions()
    dialog = CompareTable(session, session.panes[0])
    qtbot.addWidget(dialog)
    assert dialog.wer.currentData() is None and dialog.columns == table.COLUMNS  # nothing to measure against
    assert set(column(dialog, "WER")) == {"–"}
    asked = []
    monkeypatch.setattr(QInputDialog, "getMultiLineText", lambda *args: asked.append(args) or (REFERENCE, True))
    dialog.reference_button.click()  # no row selected: every row shown gets it
    assert "for the 3 panes shown" in asked[0][2]
    assert [p.reference for p in session.panes] == [REFERENCE] * 3
    assert dialog.wer.currentData() == table.REFERENCE
    assert dialog.columns[dialog.columns.index("finish") + 1] == "WER"  # in sight, next to how each reply ended
    assert column(dialog, "WER") == ["0.0 %", "11.1 %", "44.4 %"]
    at = dialog.columns.index("WER")
    assert dialog.model.index(2, at).data(Qt.ToolTipRole) == ("against its reference text: 4 errors in 9 words: "
                                                               "2 substituted, 2 deleted")

    dialog.table.selectionModel().select(dialog.table.model().index(1, 0),
                                         QItemSelectionModel.ClearAndSelect | QItemSelectionModel.Rows)
    dialog.set_reference("the quick brown fox jumped over the lazy dog")  # the selected row only
    assert [p.reference == REFERENCE for p in session.panes] == [True, False, True]
    assert column(dialog, "WER")[1] == "0.0 %"
    dialog.sort_by(at)
    assert column(dialog, "WER") == ["0.0 %", "0.0 %", "44.4 %"]

    session.panes[2].reference = ""  # changed elsewhere: the table re-reads the session
    qtbot.waitUntil(lambda: column(dialog, "WER")[2] == "–")
    assert dialog.model.index(2, at).data(Qt.ToolTipRole) == "no reference text"


def test_the_table_measures_against_a_pane_chosen_as_the_reference(qtbot):
    session = transcriptions(reference=REFERENCE)  # a pane's reply wins over the texts when it is chosen
    dialog = CompareTable(session, session.panes[1])
    qtbot.addWidget(dialog)
    assert dialog.wer.currentData() == table.REFERENCE  # panes with a reference text: measured at once
    dialog.wer.setCurrentIndex(dialog.wer.findData(session.panes[1].id))
    assert dialog.wer.currentText() == "take 2's reply"
    assert column(dialog, "WER") == ["11.1 %", "0.0 %", "55.6 %"]  # "jumped" is one more error for take 3
    assert dialog.model.index(0, dialog.columns.index("WER")).data(Qt.ToolTipRole) == (
        "against take 2's reply: 1 error in 9 words: 1 substituted")
    session.panes[1].result = PaneResult(state=RunState.DONE, text="")  # an empty reference: no division by zero
    qtbot.waitUntil(lambda: column(dialog, "WER") == ["–", "0.0 %", "–"])
    dialog.wer.setCurrentIndex(dialog.wer.findData(None))
    assert dialog.columns == table.COLUMNS and set(column(dialog, "WER")) == {"–"}


def test_the_diff_view_shows_the_word_error_rate_live(qtbot):
    session = transcriptions()
    left, right = session.panes[0], session.panes[2]
    dialog = DiffDialog(session, left, right)
    qtbot.addWidget(dialog)
    assert dialog.word_errors.text() == ("Word error rate, right against left: 44.4 % (4 errors in 9 words: "
                                         "2 substituted, 2 deleted)")
    right.reference = REFERENCE.upper()  # a pane's own reference text is measured too (normalised)
    qtbot.waitUntil(lambda: "against the reference text" in dialog.word_errors.text())
    assert dialog.word_errors.text().endswith("· against the reference text: right 44.4 %")
    right.result = PaneResult(state=RunState.GENERATING, text="The quick brown")  # streaming: re-read as it grows
    qtbot.waitUntil(lambda: dialog.word_errors.text().startswith("Word error rate, right against left: 66.7 %"))
    left.result = PaneResult(state=RunState.DONE, text="")
    qtbot.waitUntil(lambda: "right against left: – (no rate: the reference has no words, the reply has 3 words)"
                    in dialog.word_errors.text())
