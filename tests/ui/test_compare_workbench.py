"""The compare workbench on the real engine: a 2x3 sweep, its headers, the diff view, the table, columns mode,
ratings."""

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QDialog, QDialogButtonBox

from app.session import RunState
from app.session.table import COLUMNS
from app.ui.compare.diff_view import DELETED, INSERTED
from app.ui.compare.variants_dialog import VariantsDialog
from app.ui.theme import blend
from tests.ui.conftest import wait_until
from tests.ui.test_end_to_end import prepare


def make_sweep(window, loop, max_tokens=24, run=True):
    source = prepare(window, ["Write one sentence about the sea."], max_tokens=max_tokens, temperature=0.5)[0]
    dialog = VariantsDialog(source.spec, window)
    dialog.tabs.setCurrentIndex(1)
    dialog.axis_edits["temperature"].setText("0, 0.8")
    dialog.axis_edits["seed"].setText("1 2 3")
    assert dialog.summary.text().startswith("Creates 6 pane(s)")
    assert dialog.buttons.button(QDialogButtonBox.Ok).isEnabled()
    views = window.compare.add_variants(source, dialog.panes(), run=run)
    return source, views


def test_a_two_by_three_sweep_runs_as_a_group_with_headers_that_say_what_differs(loaded_window, loop):
    source, views = make_sweep(loaded_window, loop)
    group = [source, *views]
    assert len(views) == 6 and len({v.spec.group for v in group}) == 1
    wait_until(loop, lambda: all(v.state == RunState.DONE for v in views), timeout=180)
    assert source.state == RunState.IDLE  # the sweep ran its variants, not the pane they copy
    headers = [v.title.toolTip() for v in views]
    assert headers == ["T 0 · seed 1", "T 0 · seed 2", "T 0 · seed 3", "T 0.8 · seed 1", "T 0.8 · seed 2",
                       "T 0.8 · seed 3"]
    greedy = {v.spec.result.text for v in views[:3]}
    assert len(greedy) == 1  # temperature 0: the seed cannot matter
    assert loaded_window.bridge.main.stats().coalesced == 2  # ... so two of the three were decoded once


def test_the_diff_view_highlights_and_marks_the_first_divergent_token(loaded_window, loop):
    source, views = make_sweep(loaded_window, loop, run=False)
    for view in (views[0], views[3]):
        view.options.probabilities.setChecked(True)
        view.commit_form()
    dialog = loaded_window.compare.open_diff(views[0], views[3])
    assert loaded_window.compare.run_group(source) == 7
    wait_until(loop, lambda: "streaming" in dialog.similarity.text(), timeout=60)  # live while they stream
    wait_until(loop, lambda: not any(v.busy for v in [source, *views]), timeout=180)
    wait_until(loop, lambda: "streaming" not in dialog.similarity.text(), timeout=5)
    a, b = views[0].spec.result, views[3].spec.result
    assert a.text != b.text, "greedy and T 0.8 should differ on this prompt"
    base = dialog.palette().color(QPalette.Base)  # the highlights are tints of it (light or dark theme)
    assert "line-through" in dialog.left_view.toHtml() or blend(base, *DELETED).name() in dialog.left_view.toHtml()
    assert blend(base, *INSERTED).name() in dialog.right_view.toHtml()
    assert dialog.similarity.text().startswith("Similarity: words ")
    note = dialog.divergence.text()
    assert note.startswith("First divergent token: #") and note.count("%") == 2  # both panes' probabilities
    dialog.close()


def test_the_table_sorts_selects_and_exports(loaded_window, loop, tmp_path):
    source, views = make_sweep(loaded_window, loop, max_tokens=12)
    wait_until(loop, lambda: not any(v.busy for v in [source, *views]), timeout=180)
    views[1].rating.stars[3].click()
    views[1].rating.note.setText("best")
    views[1].rating.note.textEdited.emit("best")
    assert views[1].spec.rating == 4 and views[1].spec.note == "best"
    table = loaded_window.compare.open_table(source)
    assert table.model.rowCount() == 7  # the group: source and six variants
    selected = []
    table.sig_pane_selected.connect(selected.append)
    column = COLUMNS.index("rating")
    header = table.table.horizontalHeader()
    header.sectionClicked.emit(column)  # a click on the header sorts by it, a second one descending
    header.sectionClicked.emit(column)
    assert (table.sort_column, table.descending) == ("rating", True)
    assert header.sortIndicatorSection() == column and header.sortIndicatorOrder() == Qt.DescendingOrder
    assert table.cell(0, column) == "4"  # rated first, the unrated after it
    assert table.cell(6, column) == "–"
    table.table.selectRow(0)
    assert selected == [views[1].spec]
    out = table.export(str(tmp_path / "c.csv"))
    lines = out.read_text().splitlines()
    assert len(lines) == 8 and lines[0].startswith("pane,title,model,differs") and "best" in out.read_text()


def test_columns_mode_shows_the_group_side_by_side_compact(loaded_window, loop):
    other = loaded_window.grid.panes[1]
    source, views = make_sweep(loaded_window, loop, max_tokens=4)
    loaded_window.compare.on_pane_action(source, "columns")
    group = [source, *views]
    assert all(v.isVisible() and not v.prompt.isVisible() and v.width() == v.maximumWidth() for v in group)
    assert not other.isVisible()
    scroll = loaded_window.grid.horizontalScrollBar()
    wait_until(loop, lambda: scroll.maximum() > 0, timeout=5)  # 7 fixed-width columns scroll sideways
    loaded_window.grid.show_group_in_columns(None)
    assert other.isVisible() and source.prompt.isVisible()
    wait_until(loop, lambda: not any(v.busy for v in group), timeout=120)


def test_a_sweep_runs_its_source_again_only_when_asked(loaded_window, loop, monkeypatch):
    """Before: a sweep silently re-ran the pane it copied (its reply became a new version)."""
    source = prepare(loaded_window, ["Name a colour."], max_tokens=6)[0]
    assert source.run()
    wait_until(loop, lambda: source.state == RunState.DONE, timeout=120)
    runs = len(source.spec.versions)
    ticked = []

    def accept_a_sweep(dialog):
        assert dialog.include_source.text() == f"Run {source.spec.label} again too"
        assert not dialog.include_source.isChecked()  # off unless asked
        dialog.include_source.setChecked(bool(ticked))
        assert ("runs again" in dialog.summary.text()) == bool(ticked)
        dialog.tabs.setCurrentIndex(1)
        dialog.axis_edits["temperature"].setText("0.3 0.6")
        return QDialog.Accepted

    monkeypatch.setattr(VariantsDialog, "exec", accept_a_sweep)
    views = loaded_window.compare.variants_dialog(source)
    assert len(views) == 2 and not source.busy and all(v.busy or v.state == RunState.DONE for v in views)
    wait_until(loop, lambda: all(v.state == RunState.DONE for v in views), timeout=120)
    assert len(source.spec.versions) == runs and source.state == RunState.DONE  # kept its reply, not re-run
    ticked.append(True)
    views = loaded_window.compare.variants_dialog(source)
    wait_until(loop, lambda: not any(v.busy for v in [source, *views]), timeout=120)
    assert len(source.spec.versions) == runs + 1  # asked: it ran again with its new variants
