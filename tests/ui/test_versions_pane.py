"""A pane with several versions shows "version N of M"; back and forward show each version's conversation and
reply, and Branch makes a pane that replays the shown version."""

from app.engine import SamplingParams
from app.session import PaneResult, PaneSpec, RunState, Session, versions
from app.ui.bridge import EngineBridge
from app.ui.main_window import MainWindow

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
        assert bar.isVisible() and bar.label.text() == "version 3 of 3" and not bar.forward.isEnabled()
        bar.back.click()
        qtbot.waitUntil(lambda: "Red, like a rose." in view.output.toPlainText())
        assert bar.label.text() == "version 2 of 3" and bar.forward.isEnabled()
        assert pane.result is pane.versions[1].result and pane.turns[-1]["content"] == REPLIES[1]
        bar.branch_button.click()  # no model is loaded: the branch is made, and its run says why it cannot start
        assert len(window.session.panes) == 2
        copy = window.session.panes[1]
        assert copy.turns[-1]["content"] == REPLIES[1] and copy.max_tokens == 21 and copy.group == pane.group
        assert copy.sampling.temperature == 0.2
        bar.forward.click()
        qtbot.waitUntil(lambda: bar.label.text() == "version 3 of 3")
    finally:
        window.close()
