"""Hundreds of panes: a pane's widgets are built when it comes on screen (scrolled to, picked in a comparison,
reached with Tab), never before; one built late shows everything its spec holds, the reply streamed while it
was not built included; panes not built yet close like the others."""

from PySide6.QtCore import QEvent, QRect, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.session import RunState, sweep

SWEEP = {"temperature": [0.2, 0.5, 0.8, 1.1], "seed": [1, 2, 3, 4], "top_k": [10, 20, 40, 80],
         "min_p": [0.0, 0.05, 0.1, 0.2]}  # 256 panes, as the benchmark's sweep


def big_sweep(window, qtbot):
    window.resize(1400, 900)
    source = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
    source.spec.draft = "Tell me about lighthouses."
    views = window.compare.add_variants(source, sweep.expand(source.spec, SWEEP), run=False)
    assert len(views) == 256
    qtbot.waitUntil(lambda: bool(on_screen(window.grid)) and all(v.built for v in on_screen(window.grid)))
    return views


def on_screen(grid) -> list:
    """The views any part of which is inside the grid's viewport."""
    area = grid.viewport().rect()
    return [v for v in grid.panes if v.isVisible()
            and area.intersects(QRect(v.mapTo(grid.viewport(), v.rect().topLeft()), v.size()))]


def test_a_sweep_of_256_panes_builds_the_panes_on_screen_and_scrolling_builds_the_next(window, qtbot):
    views = big_sweep(window, qtbot)
    grid = window.grid
    built = [v for v in grid.panes if v.built]
    assert len(built) < 64 and set(on_screen(grid)) <= set(built)  # every pane's widgets made: all 258
    middle = views[128]
    assert not middle.built
    QApplication.sendPostedEvents(None, QEvent.LayoutRequest)  # the panes built at the top laid out: where it is
    grid.verticalScrollBar().setValue(middle.mapTo(grid.widget(), middle.rect().topLeft()).y())
    qtbot.waitUntil(lambda: middle in on_screen(grid) and all(v.built for v in on_screen(grid)))
    assert middle.built and middle.prompt.toPlainText() == "Tell me about lighthouses."
    assert middle.header.title.parts[1].startswith("T 0.8")  # what sets it apart, told before it was built
    assert sum(v.built for v in grid.panes) < 128


def test_a_pane_built_late_shows_the_reply_streamed_while_it_was_not(window, qtbot):
    views = big_sweep(window, qtbot)
    last = views[-1]
    result = last.spec.result
    result.stream(text="The lamp", state=RunState.GENERATING)
    result.stream(text="The lamp turns all night")
    QApplication.processEvents()
    assert not last.built  # streaming into a pane no one sees builds nothing
    window.grid.show_pane(last.spec)  # as a row picked in the comparison table does
    assert last.built and last.output.toPlainText().endswith("The lamp turns all night")
    qtbot.waitUntil(lambda: last in on_screen(window.grid))
    result.stream(text="The lamp turns all night, and the ships")
    qtbot.waitUntil(lambda: last.output.toPlainText().endswith("and the ships"))  # built: it follows the stream


def test_picking_a_row_of_the_comparison_table_builds_its_pane_and_shows_it(window, qtbot):
    views = big_sweep(window, qtbot)
    target = views[200]
    assert not target.built
    table = window.compare.open_table()
    table.sig_pane_selected.emit(target.spec)
    qtbot.waitUntil(lambda: target in on_screen(window.grid))
    assert target.built
    table.close()


def test_tab_from_the_last_built_pane_builds_the_next_and_focuses_its_editor(window, qtbot):
    views = big_sweep(window, qtbot)
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    index = max(i for i, v in enumerate(views) if v.built)
    before, after = views[index], views[index + 1]
    assert not after.built
    before.output.setFocus()
    qtbot.waitUntil(before.output.hasFocus)
    for _ in range(30):  # through whatever follows the reply in that pane
        QTest.keyClick(QApplication.focusWidget(), Qt.Key_Tab)
        if not before.isAncestorOf(QApplication.focusWidget()):
            break
    assert after.built and QApplication.focusWidget() is after.prompt
    for _ in range(30):  # back through the controls above its editor, then into the pane before it
        QTest.keyClick(QApplication.focusWidget(), Qt.Key_Backtab)
        if not after.isAncestorOf(QApplication.focusWidget()):
            break
    assert before.isAncestorOf(QApplication.focusWidget())


def test_panes_not_built_yet_are_removed_and_a_new_session_clears_them(window, qtbot):
    views = big_sweep(window, qtbot)
    unbuilt = next(v for v in reversed(views) if not v.built)
    window.controller.remove(unbuilt.spec)
    assert unbuilt not in window.grid.panes and window.grid.view_of(unbuilt.spec) is None
    window.files.unsaved = False
    assert window.files.new()
    qtbot.waitUntil(window.grid.empty_hint.isVisible)
    assert window.grid.panes == []


def test_the_comparison_table_of_256_panes_fills_in_and_refreshes_only_the_rows_that_changed(window, qtbot):
    views = big_sweep(window, qtbot)
    for i, view in enumerate(views):
        view.spec.result.stream(text=f"The lamp turns {i % 7} times a night.", state=RunState.DONE)
    table = window.compare.open_table(views[0].spec)
    similarity = table.columns.index("similarity")
    qtbot.waitUntil(lambda: all(table.cell(r, similarity).endswith("%") for r in range(table.model.rowCount())))
    assert table.model.rowCount() == 257  # the group: the source and its 256 variants
    changed, resets = [], []
    table.model.dataChanged.connect(lambda first, last: changed.append((first.row(), last.row())))
    table.model.modelReset.connect(lambda: resets.append(True))
    views[10].spec.result.stream(text="Another reply altogether.")
    qtbot.waitUntil(lambda: bool(changed))
    row = next(r for r in range(257) if table.model.rows[r]["id"] == views[10].spec.id)
    assert changed == [(row, row)] and not resets  # was: every cell of every row set again
    table.close()


def test_opening_a_session_of_256_panes_reads_it_on_a_worker_and_builds_the_panes_on_screen(window, qtbot,
                                                                                            tmp_path, monkeypatch):
    import threading

    from app.session import Session

    big_sweep(window, qtbot)
    path = tmp_path / "big.chorus.json"
    window.session.save(path)
    window.files.unsaved = False
    threads = []
    real_load = Session.load.__func__
    monkeypatch.setattr(Session, "load", classmethod(
        lambda cls, p: threads.append(threading.current_thread()) or real_load(cls, p)))
    assert window.files.open(str(path))
    assert threads and threads[0] is not threading.main_thread()  # was read and decoded on the GUI thread
    assert len(window.grid.panes) == 258
    qtbot.waitUntil(lambda: bool(on_screen(window.grid)) and all(v.built for v in on_screen(window.grid)))
    assert sum(v.built for v in window.grid.panes) < 64
