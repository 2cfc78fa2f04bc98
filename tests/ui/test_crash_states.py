"""After a crash, every visible state agrees with itself: the real app runs panes and an evaluation, is killed
with SIGKILL mid-run, and its autosave is restored in a window. The evaluation offers Resume (not Run), its cells
read "not run" without also saying "waiting…", the panes keep the text the autosave held, and on the resume (on
the real model) the header's token total never goes backwards and the elapsed time covers both parts."""

import re
import subprocess
import sys

import yaml
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QStyleOptionViewItem

from app.engine import SamplingParams
from app.session import PaneResult, PaneSpec, RunState, Session, autosave
from app.session.autosave import AUTOSAVE_NAME
from app.ui import settings as keys
from app.ui.bridge import EngineBridge
from app.ui.evaluate.cell import CellDelegate
from app.ui.evaluate.matrix import CELL_ROLE
from app.ui.evaluate.view import duration
from app.ui.window.main_window import MainWindow
from tests.conftest import TEST_THREADS
from tests.fixtures.step_gate import held_steps
from tests.ui.conftest import wait_until
from tests.ui.test_crash_recovery import ROOT, app_env, kill_when

GREEDY = SamplingParams(temperature=0)
PROMPTS = ["Write a story about a lighthouse.", "Explain photosynthesis in detail.", "List 50 animals.",
           "Write a poem about rain.", "Describe Paris.", "Count from 1 to 100."]


class _Recorder:
    """A QPainter that also records every text drawn through it (what a user reads in a cell)."""

    def __init__(self, painter: QPainter):
        self._painter, self.texts = painter, []

    def drawText(self, *args):  # noqa: N802 (Qt's name)
        self.texts.append(args[-1])
        return self._painter.drawText(*args)

    def __getattr__(self, name):
        return getattr(self._painter, name)


def painted(view, index) -> list[str]:
    """The texts the matrix's delegate paints for one cell."""
    option = QStyleOptionViewItem()
    view.table.initViewItemOption(option)
    option.rect = view.table.visualRect(index)
    option.widget = view.table
    image = QImage(max(option.rect.width(), 260), max(option.rect.height(), 96), QImage.Format_ARGB32)
    option.rect.moveTo(0, 0)
    painter = QPainter(image)
    try:
        recorder = _Recorder(painter)
        CellDelegate(view.table).paint(recorder, option, index)
    finally:
        painter.end()
    return [text for text in recorder.texts if text]


def cell_indexes(view):
    model = view.proxy
    return [model.index(r, c) for r in range(model.rowCount()) for c in range(1, model.columnCount())]


def token_total(view) -> int:
    """The sum of the columns' headers' "N tok"."""
    model = view.model
    total = 0
    for column in range(1, model.columnCount()):
        found = re.search(r"(?<![\d.])(\d+) tok(?![/\w])", model.headerData(column, Qt.Horizontal))  # not tok/s
        total += int(found.group(1)) if found else 0
    return total


def test_an_evaluation_killed_mid_run_comes_back_resumable_with_its_text_time_and_tokens(
        tmp_path, qtbot, settings, loop, model_path):
    Session(panes=[PaneSpec(title=f"P{i}", draft=p, sampling=GREEDY, max_tokens=120)
                   for i, p in enumerate(PROMPTS)]).save(tmp_path / "start.chorus.json")
    (tmp_path / "tests.csv").write_text("topic\nrain\nbread\nthe sea\ncats\n", encoding="utf-8")
    config = {"description": "topics", "prompts": [{"raw": "Write a long story about {{topic}}."}],
              "providers": [{"id": f"file://{model_path}", "label": f"max {n}",
                             "config": {"temperature": 0, "max_tokens": n}} for n in (150, 160)],
              "tests": "file://tests.csv", "defaultTest": {"assert": [{"type": "icontains", "value": "e"}]}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    env = app_env(tmp_path)
    path = tmp_path / "data" / AUTOSAVE_NAME
    proc = subprocess.Popen([sys.executable, "-m", "tests.fixtures.eval_crash_driver",
                             str(tmp_path / "start.chorus.json"), str(tmp_path / "config.yaml")], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def mid_run(data) -> bool:  # cells stream, none has finished yet
        cells = (data.get("evaluation") or {}).get("cells", [])
        return any(c["status"] == "running" and len(c["result"].get("text", "")) > 20 for c in cells) and not any(
            c["status"] in ("pass", "fail", "error") for c in cells)

    at_kill = kill_when(path, proc, mid_run, timeout=240)

    restored = autosave.restore(path)
    assert restored.message is None and restored.session.evaluation is not None
    window = MainWindow(EngineBridge(), settings, autosave_path=tmp_path / "again.chorus.json", restored=restored)
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    try:
        evaluation, view = window.session.evaluation, window.evals.view
        left = len(evaluation.unfinished())
        assert left == len(evaluation.cells)  # killed before any cell finished
        assert view.resume_button.isEnabled() and view.resume_button.text() == f"Resume ({left} cells)"
        before_s = evaluation.duration_s  # the time it had run, as the autosave last saw it
        assert before_s is not None and before_s > 0
        assert view.eta.text() == f"ran {duration(before_s)} so far"
        for index in cell_indexes(view):
            texts = painted(view, index)
            assert "NOT RUN" in texts and "WAITING" not in texts and "waiting…" not in texts, texts
            cell = index.data(CELL_ROLE)
            if cell.output:  # what had streamed is shown, and why it is not final
                assert any(text.startswith("interrupted: Resume") for text in texts), texts
        saved_panes = {p["title"]: p["result"] for p in at_kill["panes"]}
        for pane in window.session.panes:
            was, shown = saved_panes[pane.title], window.grid.view_of(pane).output.toPlainText()
            if was["state"] in ("queued", "prefilling", "generating"):
                assert pane.result.state == RunState.INTERRUPTED and pane.result.text == was["text"]
                assert shown.endswith(was["text"]) if was["text"] else "before any text arrived" in shown
        window.grab().save(str(tmp_path / "restored.png"))

        settings.set(keys.SLOTS, 4)
        settings.set(keys.CONTEXT_PER_SLOT, 1024)
        settings.set(keys.THREADS, TEST_THREADS)
        assert loop.run_until_complete(window.load_model(str(model_path))) is not None
        totals = [token_total(view)]
        assert totals[0] > 0  # the tokens streamed before the crash
        view.model.sig_flushed.connect(lambda: totals.append(token_total(view)))
        view.resume_button.click()
        wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=300)
        assert totals == sorted(totals), totals  # never backwards
        assert totals[-1] == token_total(view) > totals[0]
        assert evaluation.duration_s > before_s
        assert view.eta.text().startswith(f"finished after {duration(evaluation.duration_s)} (")
        assert view.eta.text().endswith(" this run)")
    finally:
        window.close()


def test_a_reply_interrupted_before_any_text_says_so(qtbot, settings, tmp_path):
    """A pane still queued when Chorus stopped has no text to keep: it says so, not an empty reply."""
    session = Session(panes=[
        PaneSpec(title="Queued", turns=[{"role": "user", "content": "Hi"}], result=PaneResult(state=RunState.QUEUED)),
        PaneSpec(title="Streaming", turns=[{"role": "user", "content": "Hi"}],
                 result=PaneResult(state=RunState.GENERATING, text="Hello th"))])
    session.save(tmp_path / "s.chorus.json")
    window = MainWindow(EngineBridge(), settings, session=Session.load(tmp_path / "s.chorus.json"))
    qtbot.addWidget(window)
    window.show()
    try:
        queued, streaming = (window.grid.view_of(p).output.toPlainText() for p in window.session.panes)
        assert queued.endswith("Assistant (interrupted before any text arrived: Run asks again)\n"), queued
        assert streaming.endswith("Assistant (interrupted)\nHello th"), streaming
    finally:
        window.close()


def test_a_stopped_and_resumed_evaluation_adds_its_tokens_and_time(loaded_window, loop, tmp_path, model_path):
    """Stop mid-run, then Resume, on the real model: the cut-short cells run again from the start, yet the
    headers' token total only grows, and the elapsed time is both runs'."""
    window, view = loaded_window, loaded_window.evals.view
    (tmp_path / "tests.csv").write_text("topic\nrain\nbread\nthe sea\ncats\n", encoding="utf-8")
    config = {"description": "topics", "prompts": [{"raw": "Write a long story about {{topic}}."}],
              "providers": [{"id": f"file://{model_path}", "label": f"max {n}",
                             "config": {"temperature": 0, "max_tokens": n}} for n in (8, 160)],
              "tests": "file://tests.csv", "evaluateOptions": {"maxConcurrency": 3}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert window.evals.open_config(tmp_path / "config.yaml"), window.messages
    evaluation = window.session.evaluation
    assert view.resume_button.text() == "Resume"  # running: a first run, nothing to resume yet
    with held_steps(window) as gate:  # a step per look: a long cell is seen running however fast the machine
        wait_until(loop, lambda: any(c.finished for c in evaluation.cells) and any(
            c.status == "running" and c.generated_tokens > 10 for c in evaluation.cells) or gate.allow(), timeout=180)
        waiting = [i for i in cell_indexes(view) if i.data(CELL_ROLE).status == "pending"]
        assert waiting  # the run has not started these yet: they wait, they are not "not run"
        for index in waiting:
            texts = painted(view, index)
            assert "WAITING" in texts and "NOT RUN" not in texts and "waiting…" not in texts, texts
    view.stop_button.click()
    wait_until(loop, lambda: not window.evals.running, timeout=60)
    first_s, left = evaluation.duration_s, len(evaluation.unfinished())
    assert left and view.resume_button.text() == f"Resume ({left} cells)"
    assert view.eta.text() == f"stopped after {duration(first_s)}"
    totals = [token_total(view)]
    view.model.sig_flushed.connect(lambda: totals.append(token_total(view)))
    view.resume_button.click()
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=300)
    assert totals == sorted(totals) and totals[-1] > totals[0], totals  # never backwards
    assert evaluation.duration_s > first_s
    assert view.eta.text() == (f"finished after {duration(evaluation.duration_s)} "
                               f"({duration(evaluation.duration_s - first_s)} this run)")
