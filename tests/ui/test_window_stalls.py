"""The window's work at scale never holds the GUI thread for long in one go (`bench --panes` times it): checked by
mechanism, never by timing — how many rows the comparison table reads to size its columns, how much sliced work
runs in one event-loop turn, how a session file is decoded."""

from collections import Counter

from PySide6.QtCore import Qt, QTimer

from app.session import PaneSpec, RunState, Session, sweep
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


def test_a_sweep_and_the_panes_it_brings_on_screen_share_one_slice_per_event_loop_turn(window, qtbot, monkeypatch):
    """Each step and each pane built costs 10 ms on a made-up clock: a turn runs at most SLICE_S (25 ms) of them
    all, three. Before, the sweep's slice and the grid's building were two timers due in the same turn: six."""
    from types import SimpleNamespace

    from app.ui.pane import grid as grid_module
    from app.ui.pane.prompt_pane import PromptPane
    from app.ui.widgets import sliced

    clock = [0.0]
    fake_time = SimpleNamespace(perf_counter=lambda: clock[0])
    monkeypatch.setattr(sliced, "time", fake_time)
    monkeypatch.setattr(grid_module, "time", fake_time, raising=False)
    monkeypatch.setattr(sliced, "SLICE_S", 0.025)
    turn, work = [0], []  # work: (what, the turn it ran in)
    probe = QTimer(interval=0)  # fires once per event-loop turn, before the work due in it
    probe.timeout.connect(lambda: turn.__setitem__(0, turn[0] + 1))
    real_steps, real_build = window.controller.add_variants_steps, PromptPane.build

    def steps(source, specs):
        for spec in real_steps(source, specs):
            clock[0] += 0.01
            work.append(("step", turn[0]))
            yield spec

    def build(view):
        if not view.built:
            clock[0] += 0.01
            work.append(("build", turn[0]))
        return real_build(view)

    monkeypatch.setattr(window.controller, "add_variants_steps", steps)
    monkeypatch.setattr(PromptPane, "build", build)
    source = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
    probe.start()
    window.compare.add_variants(source, sweep.expand(source.spec, {"temperature": [0.2, 0.5, 0.8, 1.1],
                                                                   "seed": [1, 2, 3, 4, 5, 6]}), run=False)
    qtbot.waitUntil(lambda: not window.grid._to_build)
    probe.stop()
    assert sum(1 for what, _turn in work if what == "step") == 24
    assert any(what == "build" for what, _turn in work)  # panes came on screen while the sweep went on
    per_turn = Counter(t for _what, t in work)
    assert max(per_turn.values()) <= 3, per_turn


def test_opening_a_session_decodes_its_panes_one_call_each(tmp_path, monkeypatch):
    """The decoder holds the GIL for the whole of a call: a large file decoded in one call on the open's worker
    held the GUI thread as long (~100 ms at 20 MB). Each pane is its own call now; messages still name the pane."""
    import msgspec

    from app.session import SessionFileError, schema, store

    path = tmp_path / "four.chorus.json"
    panes = [PaneSpec(draft=f"question {i}", system="Be brief. " * 200) for i in range(4)]
    Session(panes=panes).save(path)
    size = path.stat().st_size
    calls = []
    real_decode = msgspec.json.decode

    scans = (schema.Header, getattr(store, "_SessionFilePanesRaw", None))  # whole file, panes only scanned

    def decode(data, *args, **kwargs):
        if kwargs.get("type") not in scans:
            calls.append(len(data))
        return real_decode(data, *args, **kwargs)

    monkeypatch.setattr(msgspec.json, "decode", decode)
    loaded = Session.load(path)
    assert [p.draft for p in loaded.panes] == [f"question {i}" for i in range(4)]
    assert calls and max(calls) < size / 2  # was one call given the whole file
    path.write_text(path.read_text().replace('"question 2"', "7"))
    try:
        store.read_session(path)
        raise AssertionError("a pane's wrong value was read")
    except SessionFileError as exc:
        assert "pane 3, draft: must be text, not a whole number" in str(exc)


def test_the_autosave_is_written_without_a_formatting_pass(tmp_path, monkeypatch):
    """Formatting is one call holding the GIL throughout: at 20 MB, 50-100 ms of the GUI thread on each autosave,
    though the worker made it. The autosave is written compact, and restores the same."""
    from app.session import autosave, store

    formatted = []
    real_format = store.formatted
    monkeypatch.setattr(store, "formatted", lambda text: formatted.append(len(text)) or real_format(text))
    session = Session(panes=[PaneSpec(draft="keep me"), PaneSpec(system="brief")])
    saver = autosave.Autosaver(tmp_path / autosave.AUTOSAVE_NAME)
    try:
        saver.save(session, "talk.chorus.json", True)
        assert saver.flush()
    finally:
        saver.close()
    assert formatted == []
    restored = autosave.restore(tmp_path / autosave.AUTOSAVE_NAME)
    assert [p.draft for p in restored.session.panes] == ["keep me", ""] and restored.session.panes[1].system == "brief"
    assert (restored.file, restored.unsaved) == ("talk.chorus.json", True)


def test_a_turn_starts_no_step_that_would_end_past_its_budget(qtbot, monkeypatch):
    """Two jobs on a made-up clock, steps of 2 ms and of 18 ms (a pane's build): each turn's steps add up to at
    most SLICE_S (25 ms), one step longer than that aside. Before, a build started at 22 ms made a turn of 40."""
    from types import SimpleNamespace

    from app.ui.widgets import sliced

    clock = [0.0]
    monkeypatch.setattr(sliced, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(sliced, "SLICE_S", 0.025)
    turn, spent = [0], Counter()  # made-up milliseconds spent per turn
    probe = QTimer(interval=0)  # fires once per event-loop turn, before the work due in it
    probe.timeout.connect(lambda: turn.__setitem__(0, turn[0] + 1))
    left = {"short": 12, "long": 5}

    def job(name, ms):
        def step():
            clock[0] += ms / 1000
            spent[turn[0]] += ms
            left[name] -= 1
            return left[name] > 0
        return step

    probe.start()
    sliced.share_turns(job("short", 2))
    sliced.share_turns(job("long", 18))
    qtbot.waitUntil(lambda: not any(left.values()))
    probe.stop()
    assert sum(spent.values()) == 12 * 2 + 5 * 18
    assert max(spent.values()) <= 25, spent


def test_a_pane_is_built_without_its_settings_forms_and_makes_each_when_it_opens(window, qtbot):
    """The Sampling, Output and Tools forms were most of a pane's build (~16 ms of its ~27 ms): a pane is
    built without them; opening a section (or asking for a part of it) makes its form, showing the spec's values;
    a pane that has not made a form leaves the spec's values as they are when it runs or commits."""
    from PySide6.QtWidgets import QWidget

    from app.ui.pane.output_options import OutputOptions
    from app.ui.pane.sampling_form import SamplingForm
    from app.ui.pane.tools_options import ToolsOptions

    pane = window.grid.add_pane()
    pane.spec.sampling = pane.spec.sampling.__class__(temperature=1.3, seed=7)
    pane.spec.tools = '[{"type": "function", "function": {"name": "f"}}]'
    other = window.grid.add_pane()
    other.build()
    forms = (SamplingForm, OutputOptions, ToolsOptions)
    assert not any(other.findChildren(form) for form in forms)
    assert len(other.findChildren(QWidget)) < 120  # 96 without the forms, WITHOUT_FORMS
    other.commit_form()  # nothing made: nothing to copy over the spec
    system, sampling, output, tools = pane._toggles
    sampling.setChecked(True)  # the Sampling section opens: its form is made, from the spec
    assert pane.findChildren(SamplingForm) and pane.sampling.isVisibleTo(pane)
    assert pane.sampling.temperature.value() == 1.3 and pane.sampling.seed.text() == "7"
    assert not pane.findChildren(ToolsOptions)
    assert pane.tools.editor.toPlainText() == pane.spec.tools  # asked for: made, loaded, still closed
    assert not pane.tools.isVisibleTo(pane) and not tools.isChecked()
    pane.commit_form()
    assert pane.spec.sampling.temperature == 1.3 and pane.spec.tools.startswith('[{"type"')


def test_a_pane_that_shows_token_probabilities_makes_its_output_form_for_the_legend(window, qtbot):
    pane = window.grid.add_pane()
    pane.spec.show_probabilities = True
    assert pane.options.legend.isVisibleTo(pane) and not pane.options.isVisibleTo(pane)
    fresh = window.grid.add_pane()
    fresh.build()
    assert not fresh.sections.built("options")
    fresh.spec.show_probabilities = True  # from a sweep or a file: the legend shows under the reply
    assert fresh.sections.built("options") and fresh.options.legend.isVisibleTo(fresh)


def test_the_panes_a_sliced_turn_adds_are_placed_within_its_budget(window, qtbot, monkeypatch):
    """On a made-up clock a step adds a pane in 1 ms and placing takes 0.5 ms a pane (as an open's steps, placed
    ~70 at a time in 15-30 ms). Placing ran on a timer of its own, due in the same pass of the event loop as the
    turn: 25 ms of steps and 12.5 of placing. The turn ends with the placing now, its steps leaving room for it
    by what it took last: about 25 ms a pass (the first turn has no figure for the placing yet)."""
    from types import SimpleNamespace

    from app.ui.pane import grid as grid_module
    from app.ui.widgets import sliced

    clock = [0.0]
    monkeypatch.setattr(sliced, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(sliced, "SLICE_S", 0.025)
    turn, work = [0], Counter()  # made-up milliseconds per event-loop turn
    probe = QTimer(interval=0)  # fires once per event-loop turn, before the work due in it
    probe.timeout.connect(lambda: turn.__setitem__(0, turn[0] + 1))
    real_steps, real_place = window.controller.add_variants_steps, grid_module.PaneGrid._place_from

    def steps(source, specs):
        for spec in real_steps(source, specs):
            clock[0] += 0.001
            work[turn[0]] += 1
            yield spec

    def place(grid, index):
        ms = 0.5 * (len(grid.panes) - index)
        clock[0] += ms / 1000
        work[turn[0]] += ms
        return real_place(grid, index)

    monkeypatch.setattr(window.controller, "add_variants_steps", steps)
    monkeypatch.setattr(grid_module.PaneGrid, "_place_from", place)
    source = window.grid.panes[0] if window.grid.panes else window.grid.add_pane()
    window.grid.settle()
    probe.start()
    views = window.compare.add_variants(source, sweep.expand(source.spec, {"seed": list(range(1, 121))}), run=False)
    qtbot.waitUntil(lambda: all(window.grid._layout.indexOf(view) >= 0 for view in views))
    probe.stop()
    passes = [work[t] for t in sorted(work)]
    assert max(passes[1:]) <= 30, passes  # was 36.5


def test_settings_forms_made_late_take_their_place_in_the_tab_order(window, qtbot):
    """A form made when its section opens joins the window's tab order where it would have been had it been made
    with the pane: after its toggle; Output's form before Tools' whichever opened first."""
    from PySide6.QtWidgets import QApplication

    pane = window.grid.add_pane()
    after = window.grid.add_pane()
    QApplication.processEvents()
    system, sampling, output, tools = pane._toggles
    tools.setChecked(True)
    output.setChecked(True)
    sampling.setChecked(True)

    def next_control(widget):
        widget = widget.nextInFocusChain()
        while widget.focusPolicy() == Qt.NoFocus:
            widget = widget.nextInFocusChain()
        return widget

    assert next_control(sampling) is pane.sampling.temperature
    assert next_control(tools) is pane.options.kind
    order, widget = [], next_control(pane)
    while pane.isAncestorOf(widget):
        order.append(widget)
        widget = next_control(widget)
    assert after.isAncestorOf(widget)  # then the next pane
    assert order.index(pane.options.editor) < order.index(pane.tools.choice) < order.index(pane.prompt)
