"""A pane with several versions shows "version N of M"; back and forward show each version's conversation and
reply, and Branch makes a pane that replays the shown version."""

from PySide6.QtCore import Qt

from app.engine import SamplingParams
from app.session import PaneResult, PaneSpec, RunState, Session, versions
from app.ui.bridge import EngineBridge
from app.ui.window.main_window import MainWindow

REPLIES = ["Blue.", "Red, like a rose.", "Green."]


def three_versions() -> PaneSpec:
    made = [versions.PaneVersion(PaneResult(state=RunState.DONE, text=t, finish_reason="stop"),
                                 [{"role": "user", "content": "Name a colour."}],
                                 {"sampling": SamplingParams(temperature=0.2 * i), "max_tokens": 20 + i})
            for i, t in enumerate(REPLIES)]
    return PaneSpec(title="Colours", turns=[{"role": "user", "content": "Name a colour."},
                                            {"role": "assistant", "content": REPLIES[2]}],
                    result=made[2].result, versions=made, current=2)


def test_back_forward_and_branch_from_the_version_bar(qtbot, settings, loop, tmp_path):
    Session(panes=[three_versions()]).save(tmp_path / "s.chorus.json")
    window = MainWindow(EngineBridge(), settings, session=Session.load(tmp_path / "s.chorus.json"),
                        autosave_path=tmp_path / "autosave.chorus.json")
    qtbot.addWidget(window)
    window.show()
    try:
        pane = window.session.panes[0]
        view = window.grid.view_of(pane)
        bar = view.version_bar
        assert bar.isVisible() and bar.label.text() == "version 3 of 3 · T 0.4 · max 22"
        assert not bar.forward.isEnabled()
        bar.back.click()
        qtbot.waitUntil(lambda: "Red, like a rose." in view.output.toPlainText())
        assert bar.label.text() == "version 2 of 3 · T 0.2 · max 21" and bar.forward.isEnabled()
        assert pane.result is pane.versions[1].result and pane.turns[-1]["content"] == REPLIES[1]
        bar.branch_button.click()  # no model is loaded: the branch is made, and its run says why it cannot start
        assert len(window.session.panes) == 2
        copy = window.session.panes[1]
        assert copy.turns[-1]["content"] == REPLIES[1] and copy.max_tokens == 21 and copy.group == pane.group
        assert copy.sampling.temperature == 0.2
        bar.forward.click()
        qtbot.waitUntil(lambda: bar.label.text().startswith("version 3 of 3"))
    finally:
        window.close()


def test_the_diff_view_and_the_table_compare_a_reply_with_its_previous_or_any_version(qtbot, settings, loop,
                                                                                       tmp_path):
    from app.session import diff, table
    from app.ui.compare.diff_view import DiffDialog
    from app.ui.compare.table import CompareTable

    pane = three_versions()
    other = PaneSpec(title="Other", result=PaneResult(state=RunState.DONE, text="Blue, like the sea."))
    session = Session(panes=[pane, other])
    dialog = DiffDialog(session, pane, pane)
    qtbot.addWidget(dialog)
    assert [dialog.left_version.itemText(i).split(" ·")[0] for i in range(dialog.left_version.count())] == [
        "shown reply", "previous version", "version 1", "version 2", "version 3"]
    dialog.pick_version("left", versions.PREVIOUS)  # the same pane: its last reply against the one before
    assert "Red, like a rose." in dialog.left_view.toPlainText() and "Green." in dialog.right_view.toPlainText()
    expected = f"Similarity: words {diff.similarity(REPLIES[1], REPLIES[2]) * 100:.0f} %"
    assert dialog.similarity.text().startswith(expected)
    dialog.right_box.setCurrentIndex(1)  # another pane's shown reply against version 1 of this one
    dialog.pick_version("left", 0)
    assert dialog.left_view.toPlainText().strip() == "Blue." and "like the sea" in dialog.right_view.toPlainText()

    rows = {r["title"]: r for r in table.rows([pane, other], table.OWN, versions.PREVIOUS)}
    assert rows["Colours"]["similarity"] == diff.similarity(REPLIES[1], REPLIES[2])
    assert rows["Other"]["similarity"] is None  # it has no earlier version
    compare = CompareTable(session, pane)
    qtbot.addWidget(compare)
    compare.reference.setCurrentIndex(compare.reference.findData(table.OWN))
    compare.version.setCurrentIndex(compare.version.findData(versions.PREVIOUS))
    shown = {r["title"]: r["similarity"] for r in compare.rows()}
    assert shown == {"Colours": diff.similarity(REPLIES[1], REPLIES[2]), "Other": None}


def two_runs():
    """An evaluation of 10 cases × 2 variants whose current run flipped 7 cells of "model A" to pass (and one to
    fail), and one of "model B" to fail; the run before is kept."""
    from app.session.eval_runs import EvalRun, RunCell
    from app.session.evaluation import BackendTarget, EvalCase, Evaluation, PromptTemplate, Variant

    cases = [EvalCase(vars={"topic": t}) for t in ("rain", "bread", "sea", "cats", "maps", "bells", "snow",
                                                      "tea", "ink", "salt")]
    variants = [Variant(provider_id="echo", label=name, prompt=PromptTemplate(raw="About {{topic}}", label="p"),
                        target=BackendTarget(kind="echo")) for name in ("model A", "model B")]
    evaluation = Evaluation(cases=cases, variants=variants, description="topics")
    before = {0: ["fail"] * 7 + ["pass"] + ["fail"] * 2, 1: ["pass"] * 10}
    after = {0: ["pass"] * 7 + ["fail"] + ["fail"] * 2, 1: ["pass"] * 9 + ["fail"]}
    for cell in evaluation.cells:
        cell.status = after[cell.variant][cell.case]
    evaluation.runs = [EvalRun(started_at="2026-11-26T07:00:00", judge="local",
                               cases=[c.model_dump(by_alias=True, mode="json") for c in cases],
                               variants=[v.model_dump(by_alias=True, mode="json") for v in variants],
                               cells=[RunCell(c, v, 0, before[v][c], reason="" if before[v][c] == "pass" else "no")
                                      for c in range(10) for v in range(2)])]
    return evaluation


def test_compare_runs_shows_the_flipped_cells_and_each_variants_change(window, qtbot):
    window.session.evaluation = two_runs()
    view = window.evals.view
    assert view.compare_runs_button.isEnabled() and view.run_again_button.isEnabled()
    dialog = window.evals.compare_runs()
    qtbot.addWidget(dialog)
    rows = [[dialog.variants.item(r, c).text() for c in range(dialog.variants.columnCount())]
            for r in range(dialog.variants.rowCount())]
    assert rows[0][:4] == ["[model A] p", "1/10 10% → 7/10 70% (+60 pts)", "1", "7"]
    assert rows[0][5] == "No detectable change"  # p = 18/256 = 0.07: the test cannot tell
    assert rows[1][:4] == ["[model B] p", "10/10 100% → 9/10 90% (-10 pts)", "1", "0"]
    flips = [[dialog.flips.item(r, c).text() for c in range(3)] for r in range(dialog.flips.rowCount())]
    assert len(flips) == 9 and ["[model B] p", "topic=salt", "pass → fail"] in flips
    assert ["[model A] p", "topic=rain", "fail → pass"] in flips


def test_diff_with_previous_is_one_click_on_the_version_bar(qtbot, settings, loop, tmp_path):
    from app.ui.compare.diff_view import DiffDialog

    window = MainWindow(EngineBridge(), settings, session=Session(panes=[three_versions()]),
                        autosave_path=tmp_path / "autosave.chorus.json")
    qtbot.addWidget(window)
    window.show()
    try:
        pane = window.session.panes[0]
        bar = window.grid.view_of(pane).version_bar
        assert bar.diff_button.isVisible() and bar.diff_button.isEnabled()
        qtbot.mouseClick(bar.diff_button, Qt.LeftButton)  # the one click
        dialog = window.compare.dialogs[-1]
        assert isinstance(dialog, DiffDialog) and dialog.isVisible() and dialog.chosen() == (pane, pane)
        assert dialog.left_version.currentText() == "previous version"
        assert dialog.left_view.toPlainText().strip() == REPLIES[1]  # version 2 against the shown version 3
        assert dialog.right_view.toPlainText().strip() == REPLIES[2]
        assert dialog.similarity.text().startswith("Similarity: words")
        bar.back.click()  # version 2 shown: its previous is version 1
        qtbot.waitUntil(lambda: bar.label.text().startswith("version 2 of 3"))
        qtbot.mouseClick(bar.diff_button, Qt.LeftButton)
        later = window.compare.dialogs[-1]
        assert later is not dialog and later.left_view.toPlainText().strip() == REPLIES[0]
        assert later.right_view.toPlainText().strip() == REPLIES[1]
        bar.back.click()  # the first version has no previous one
        qtbot.waitUntil(lambda: bar.label.text().startswith("version 1 of 3"))
        assert not bar.diff_button.isEnabled()
    finally:
        window.close()


def test_a_new_version_reads_only_its_own_settings_not_every_version_again(qtbot, monkeypatch):
    """A pane left regenerating gathers hundreds of versions: the bar reads each version's settings once. It read
    them all again on every new version (a pane built per version, each with its events), so every run cost
    more than the last and the window's memory grew with the square of the versions."""
    from app.session import compare

    reads = []
    monkeypatch.setattr(compare, "labels", lambda setup, read=compare.labels: reads.append(setup) or read(setup))
    pane, bar = _bar_gathering_versions(qtbot, 40)
    assert bar.label.text() == "version 40 of 40 · T 1"
    assert len(reads) == 40


def test_a_new_version_weighs_only_itself_in_what_sets_the_shown_one_apart(qtbot, monkeypatch):
    """What sets the shown version apart was worked out over every version again on each new one (2 + 3 + … + 40
    = 819 settings weighed for 40 versions; thousands of versions in an hour of regenerating): now each new version
    is added once to the counts; a list replaced otherwise (a version dropped) is read anew."""
    from app.session import compare

    weighed = []
    monkeypatch.setattr(compare.GrowingDiffering, "add",
                        lambda self, entry, add=compare.GrowingDiffering.add: weighed.append(entry) or add(self, entry))
    pane, bar = _bar_gathering_versions(qtbot, 40)
    assert bar.label.text() == "version 40 of 40 · T 1"  # 20 runs at T 0, 20 at T 1: the first seen is the usual
    assert len(weighed) == 40
    pane.versions = pane.versions[1:]  # the first (T 0) dropped: not the same list grown, so it is read anew
    pane.current = 38
    bar.sync()  # (39 to read: more than READ_AT_ONCE, so on the next event-loop turn)
    qtbot.waitUntil(lambda: len(weighed) == 40 + 39)
    assert bar.label.text() == "version 39 of 39"  # T 1 is the usual one now


def _bar_gathering_versions(qtbot, count: int):
    """A pane's version bar while the pane gathers `count` versions, alternately at T 0 and T 1, each shown."""
    from app.ui.pane.version_bar import VersionBar

    pane = PaneSpec(title="Colours")
    bar = VersionBar(pane, controller=None)
    qtbot.addWidget(bar)
    for i in range(count):
        result = PaneResult(state=RunState.DONE, text=f"Colour {i}.", finish_reason="stop")
        pane.versions = pane.versions.plus(versions.PaneVersion(result, [{"role": "user", "content": "A colour?"}],
                                                                {"sampling": SamplingParams(temperature=i % 2),
                                                                 "max_tokens": 20}))
        pane.result, pane.current = result, i
        bar.sync()
    return pane, bar


def test_the_bar_of_an_opened_pane_reads_its_versions_settings_and_leaves_them_packed(qtbot, tmp_path):
    """An open builds every pane's version bar, which reads what each version ran with: the versions read from the
    file stay packed (reading them whole unpacked them, and the first autosave encoded them all again)."""
    from app.ui.pane.version_bar import VersionBar

    made = [versions.PaneVersion(PaneResult(state=RunState.DONE, text=f"Colour {i}, " * 40, finish_reason="stop"),
                                 [{"role": "user", "content": "A colour?"}],
                                 {"sampling": SamplingParams(temperature=i % 2), "max_tokens": 20})
            for i in range(100)]
    path = tmp_path / "colours.chorus.json"
    Session(panes=[PaneSpec(title="Colours", result=made[-1].result, versions=made, current=99)]).save(path)
    pane = Session.load(path).panes[0]
    packed = pane.versions.packed()
    assert packed == 99  # all but the shown one
    bar = VersionBar(pane, controller=None)
    qtbot.addWidget(bar)
    qtbot.waitUntil(lambda: bar.label.text() == "version 100 of 100 · T 1")
    assert pane.versions.packed() == packed


def test_a_bar_built_with_many_versions_reads_their_settings_after_its_build(qtbot, monkeypatch):
    """Opening a session builds every pane on screen, one a step: reading 100 versions' settings was half of such
    a pane's build (~15 ms), the longest step of opening 1,000 versions. The bar is built showing its count, and
    what sets the shown version apart comes on the next event-loop turn; a version added later is read at once."""
    from app.session import compare
    from app.ui.pane.version_bar import READ_AT_ONCE, VersionBar

    reads = []
    monkeypatch.setattr(compare, "labels", lambda setup, read=compare.labels: reads.append(setup) or read(setup))
    made = [versions.PaneVersion(PaneResult(state=RunState.DONE, text=f"Colour {i}.", finish_reason="stop"),
                                 [{"role": "user", "content": "A colour?"}],
                                 {"sampling": SamplingParams(temperature=i % 2), "max_tokens": 20})
            for i in range(100)]
    pane = PaneSpec(title="Colours", result=made[-1].result, versions=made, current=99)
    bar = VersionBar(pane, controller=None)
    qtbot.addWidget(bar)
    assert bar.label.text() == "version 100 of 100" and not reads and 100 > READ_AT_ONCE
    qtbot.waitUntil(lambda: bar.label.text() == "version 100 of 100 · T 1")
    assert len(reads) == 100
    result = PaneResult(state=RunState.DONE, text="Colour 100.", finish_reason="stop")
    pane.versions = pane.versions.plus(versions.PaneVersion(result, [{"role": "user", "content": "A colour?"}],
                                                            {"sampling": SamplingParams(temperature=0.5),
                                                             "max_tokens": 20}))
    pane.result, pane.current = result, 100
    bar.sync()
    assert bar.label.text() == "version 101 of 101 · T 0.5" and len(reads) == 101
