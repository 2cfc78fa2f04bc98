"""The evaluation view in the window: a config that cannot run is explained and changes nothing; the column
headers carry 95 % Wilson intervals; the failures and disagreements filters; a double-clicked cell opens as a
pane; a resume after a kill re-runs only the missing cells; judge requests decode in the same engine steps as
generations. On the real engine where a model runs (echo cells need none)."""

import dataclasses
import json
import threading

import yaml
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.evaluate import read_config, stats
from app.session import PaneResult, RunState, Session, autosave
from app.ui.bridge import EngineBridge
from app.ui.evaluate.matrix import CELL_ROLE, STATE_ROLE, EvalTableModel
from app.ui.window.main_window import MainWindow
from tests.fixtures.step_gate import held_steps
from tests.ui.conftest import wait_until


def write_config(tmp_path, config: dict, csv: str | None = None):
    if csv is not None:
        (tmp_path / "tests.csv").write_text(csv, encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def finished(window) -> bool:
    evaluation = window.session.evaluation
    return evaluation is not None and not window.evals.running and not evaluation.unfinished()


def header(window, variant: int) -> str:
    return window.evals.view.model.headerData(variant + 1, Qt.Horizontal)


# --- echo: no model ------------------------------------------------------------------------------------------------
ECHO = {"description": "echo", "prompts": ["Say {{word}}", "Shout {{word}}"], "providers": ["echo"]}


def test_the_matrix_repaints_a_cell_from_the_cells_own_events_with_no_runner(qtbot, tmp_path):
    """No EvaluationRunner and no relay: a cell's own events (a field set, its result streamed) repaint it."""
    evaluation = read_config({**ECHO, "tests": [{"vars": {"word": "a"}}]}, tmp_path).evaluation()
    model = EvalTableModel()
    model.set_evaluation(evaluation)
    cell, index = evaluation.cell(0, 1), model.index(0, 2)
    assert index.data(CELL_ROLE) is cell and index.data() == "" and index.data(STATE_ROLE) == "pending"
    with qtbot.waitSignal(model.dataChanged, check_params_cb=lambda first, last, *_: first == index == last):
        cell.status = "running"
        cell.result.stream(text="Shout", state=RunState.PREFILLING)  # what a runner's pump does to it
    assert index.data() == "Shout" and index.data(STATE_ROLE) == "prefilling"
    with qtbot.waitSignal(model.dataChanged, check_params_cb=lambda first, last, *_: first == index == last):
        cell.result.stream(text="Shout a")
    assert index.data() == "Shout a"
    with qtbot.waitSignal(model.dataChanged, check_params_cb=lambda first, last, *_: first == index == last):
        cell.result = PaneResult(state=RunState.DONE, text="Shout a!")  # a new result is heard as well
    assert index.data() == "Shout a!"
    model.set_evaluation(None)  # no longer shown: its events no longer reach the model
    with qtbot.assertNotEmitted(model.dataChanged, wait=300):
        cell.status = "pass"


def test_autosave_hears_an_evaluation_s_cells_through_the_session(window, tmp_path):
    """The window's autosave listens to `session.events.all` only: a cell's change reaches it there."""
    window.session.evaluation = read_config({**ECHO, "tests": [{"vars": {"word": "a"}}]}, tmp_path).evaluation()
    cell = window.session.evaluation.cell(0, 0)
    window.files.unsaved = False
    cell.status = "running"
    assert window.files.unsaved
    window.files.unsaved = False
    cell.result.stream(text="Say")
    assert window.files.unsaved


def test_a_config_that_cannot_run_lists_every_problem_and_changes_nothing(window, tmp_path):
    config = {"prompts": ["Hi {{x}}"], "providers": ["echo", "file://nowhere.gguf"], "colour": "blue",
              "tests": [{"vars": {"x": 1}, "assert": [{"type": "classifier", "value": "1"}]}]}
    assert not window.evals.open_config(write_config(tmp_path, config))
    assert window.session.evaluation is None and not window.eval_dock.isVisible()
    message = window.messages[-1]
    assert message.startswith("Cannot run this evaluation: promptfooconfig.yaml cannot run as written (3 problems)")
    for part in ("nowhere.gguf", "colour", "classifier", "Nothing was changed."):
        assert part in message
    assert window.findChildren(QMessageBox)


def test_headers_carry_the_pass_rate_with_its_wilson_interval(window, loop, tmp_path):
    # echo outputs "Say <word>": it contains "o" for 7 of the 10 words
    words = ["dog", "cat", "owl", "fox", "cow", "ant", "bob", "rob", "yak", "moo"]  # 7 with an o
    config = {**ECHO, "prompts": ["Say {{word}}"],
              "tests": [{"vars": {"word": w}, "assert": [{"type": "contains", "value": "o"}]} for w in words]}
    assert window.evals.open_config(write_config(tmp_path, config))
    wait_until(loop, lambda: finished(window), timeout=30)
    window.evals.view.model.flush()
    text = header(window, 0)
    # Wilson 95 % for 7/10: 0.3968–0.8922 (Newcombe 1998, table I); for 10/10: 0.7225–1
    assert "7/10 pass · 70% (95% CI 40%–89%)" in text, text
    low, high = stats.wilson_interval(7, 10)
    assert abs(low - 0.3968) < 5e-4 and abs(high - 0.8922) < 5e-4
    assert "score 0.70" in text and "[echo] Say {{word}}" in text
    config["tests"] = [{"vars": {"word": w}, "assert": [{"type": "contains", "value": w}]} for w in words]
    window.session.evaluation = None
    assert window.evals.open_config(write_config(tmp_path, config))
    wait_until(loop, lambda: finished(window), timeout=30)
    window.evals.view.model.flush()
    assert "10/10 pass · 100% (95% CI 72%–100%)" in header(window, 0)


def test_filters_show_failures_and_disagreements(window, loop, tmp_path):
    # Say/Shout × three words, contains "ay": Say passes every row, Shout only where the word brings "ay"
    config = {**ECHO, "tests": [{"vars": {"word": w}, "assert": [{"type": "contains", "value": "ay"}]}
                                for w in ("hay", "no", "maybe")]}
    config["tests"].append({"vars": {"word": "zz"}, "assert": [{"type": "contains", "value": "zz"}]})
    assert window.evals.open_config(write_config(tmp_path, config))
    wait_until(loop, lambda: finished(window), timeout=30)
    view = window.evals.view
    statuses = [[c.status for c in window.session.evaluation.row(case)] for case in range(4)]
    assert statuses == [["pass", "pass"], ["pass", "fail"], ["pass", "pass"], ["pass", "pass"]]
    view.set_filter("failures")
    assert view.visible_cases() == [1]
    view.set_filter("disagreements")
    assert view.visible_cases() == [1]
    config["tests"][3]["assert"] = [{"type": "contains", "value": "nowhere"}]  # fails in both: no disagreement
    window.session.evaluation = None
    assert window.evals.open_config(write_config(tmp_path, config))
    wait_until(loop, lambda: finished(window), timeout=30)
    view.filter_buttons.button(1).click()  # Failures
    assert view.proxy.mode == "failures" and view.visible_cases() == [1, 3]
    view.filter_buttons.button(2).click()  # Disagreements
    assert view.visible_cases() == [1]
    view.filter_buttons.button(0).click()
    assert view.visible_cases() == [0, 1, 2, 3]
    assert view.summary.text().startswith("5 passed · 3 failed · 0 errors")


def test_a_restored_session_shows_its_evaluation_ready_to_resume_and_exports(qtbot, settings, loop, tmp_path):
    config = {**ECHO, "tests": [{"vars": {"word": w}} for w in ("a", "b")]}
    evaluation = read_config(config, tmp_path).evaluation()
    evaluation.cells[0].status, evaluation.cells[0].result = "pass", PaneResult(state=RunState.DONE, text="Say a")
    evaluation.cells[1].status = "running"  # the app was killed here
    evaluation.cells[1].result = PaneResult(state=RunState.GENERATING, text="Sh")
    Session(evaluation=evaluation).save(tmp_path / "s.chorus.json")
    session = Session.load(tmp_path / "s.chorus.json")
    window = MainWindow(EngineBridge(), settings, session=session, autosave_path=tmp_path / "autosave.chorus.json")
    qtbot.addWidget(window)
    window.show()
    try:
        view = window.evals.view
        assert window.eval_dock.isVisible() and view.model.rowCount() == 2 and view.model.columnCount() == 3
        assert [c.status for c in session.evaluation.cells] == ["pass", "pending", "pending", "pending"]
        assert view.resume_button.text() == "Resume (3 cells)" and view.progress.value() == 1
        assert view.model.index(0, 1).data(CELL_ROLE) is session.evaluation.cells[0]
        view.resume_button.click()  # echo needs no model
        wait_until(loop, lambda: finished(window), timeout=30)
        assert session.evaluation.cells[0].output == "Say a" and session.evaluation.cells[1].output == "Shout a"
        assert window.evals.export(tmp_path / "results.json") and window.evals.export(tmp_path / "report.html")
        document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
        assert len(document["results"]["results"]) == 4
        assert not window.evals.export(tmp_path / "results.txt") and "unknown output type" in window.messages[-1]
    finally:
        window.close()


# --- the real engine -----------------------------------------------------------------------------------------------
def local_config(model_path, max_tokens=(8, 40), rubric=True, prompt="Write one sentence about {{topic}}."):
    asserts = [{"type": "icontains", "value": "e"}]
    if rubric:
        asserts.append({"type": "llm-rubric", "value": "The reply is about the topic {{topic}}"})
    return {"description": "topics", "prompts": [{"raw": prompt}],
            "providers": [{"id": f"file://{model_path}", "label": f"max {n}",
                           "config": {"temperature": 0, "max_tokens": n}} for n in max_tokens],
            "tests": "file://tests.csv", "defaultTest": {"assert": asserts}}


TOPICS = "topic\nrain\nbread\nthe sea\ncats\nmountains\ncoffee\n"


def test_a_double_clicked_cell_opens_as_a_pane_with_its_output_and_probabilities(loaded_window, loop, tmp_path,
                                                                                 model_path, qtbot):
    window = loaded_window
    config = local_config(model_path, max_tokens=(12,), rubric=False)
    assert window.evals.open_config(write_config(tmp_path, config, "topic\nrain\nbread\n")), window.messages
    wait_until(loop, lambda: finished(window), timeout=180)
    cell = window.session.evaluation.cell(1, 0)
    assert cell.output and cell.status in ("pass", "fail")
    table = window.evals.view.table
    index = next(table.model().index(r, 1) for r in range(table.model().rowCount())
                 if table.model().index(r, 1).data(CELL_ROLE) is cell)
    before = len(window.session.panes)
    rect = table.visualRect(index)
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())
    assert len(window.session.panes) == before + 1
    pane = window.session.panes[-1]
    assert pane.title == "max 12 · case 2" and pane.backend == "local"
    assert pane.turns == [{"role": "user", "content": "Write one sentence about bread."},
                          {"role": "assistant", "content": cell.output}]
    assert pane.result.text == cell.output and pane.result.state.value == "done"
    assert len(pane.result.token_logprobs) == cell.generated_tokens and pane.show_probabilities
    assert pane.sampling.temperature == 0 and pane.max_tokens == 12
    assert window.grid.view_of(pane) is not None
    branched = window.controller.branch(pane, 1, pane.result.token_logprobs[1].top[1][1])  # branching works on it
    wait_until(loop, lambda: branched.result.state.value == "done", timeout=60)


def test_resume_after_a_kill_reruns_only_the_missing_cells(loaded_window, loop, tmp_path, model_path):
    window = loaded_window
    config = local_config(model_path, max_tokens=(6, 48), rubric=False, prompt="Write a long story about {{topic}}.")
    assert window.evals.open_config(write_config(tmp_path, config, TOPICS))
    evaluation = window.session.evaluation
    streamed = []  # a cell seen running with part of its output: cells stream

    def progressed() -> bool:
        streamed.extend(c.output for c in evaluation.cells if c.status == "running" and c.output)
        return sum(c.finished for c in evaluation.cells) >= 4

    with held_steps(window) as gate:  # a step per look: the run is caught part-way however fast the machine
        wait_until(loop, lambda: progressed() or gate.allow(), timeout=180)
        assert window.evals.running and streamed
        window.files.autosave()  # what the disk holds when the app is killed now
        saved = autosave.restore(window.files.autosave_path).session.evaluation
        assert window.evals.view.stop_button.isEnabled() and not window.evals.view.resume_button.isEnabled()
    window.evals.view.stop_button.click()
    wait_until(loop, lambda: not window.evals.running, timeout=60)
    done = {(c.case, c.variant): (c.status, c.output) for c in saved.cells if c.finished}
    missing = [(c.case, c.variant) for c in saved.cells if not c.finished]
    assert len(done) >= 4 and missing
    assert all(c.status == "pending" for c in saved.cells if not c.finished)  # "running" came back "not run"
    restarted = autosave.restore(window.files.autosave_path).session
    window.controller.replace(restarted)  # as the window starts from the autosave
    assert window.evals.view.resume_button.isEnabled()
    assert window.evals.view.resume_button.text() == f"Resume ({len(missing)} cells)"
    submitted = []
    submit = window.runner.submit
    window.runner.submit = lambda request, *args: (submitted.append(request), submit(request, *args))[1]
    window.evals.view.resume_button.click()
    wait_until(loop, lambda: finished(window), timeout=300)
    again = window.session.evaluation
    assert len(submitted) == len(missing)
    assert {(c.case, c.variant): (c.status, c.output) for c in again.cells if (c.case, c.variant) in done} == done
    assert all(c.finished for c in again.cells)


def test_judge_requests_decode_in_the_same_steps_as_generations(loaded_window, loop, tmp_path, model_path):
    window = loaded_window
    kinds, steps, lock = {}, [], threading.Lock()
    submit = window.runner.submit

    def tracking_submit(request, *args):
        handle = submit(request, *args)
        kinds[handle.id] = "judge" if request.json_schema else "generation"
        return handle

    window.runner.submit = tracking_submit

    def on_step(event):
        with lock:
            steps.append(set(event.tokens))

    window.bridge.add_step_listener(on_step)
    assert window.evals.open_config(write_config(tmp_path, local_config(model_path), TOPICS))
    wait_until(loop, lambda: finished(window), timeout=600)
    window.bridge.remove_step_listener(on_step)
    evaluation = window.session.evaluation
    assert all(c.status in ("pass", "fail") for c in evaluation.cells), [c.error for c in evaluation.cells]
    calibrated = sum(c.total for c in evaluation.calibrations)  # the judge's calibration questions, asked first
    assert sorted(kinds.values()).count("judge") == len(evaluation.cells) + calibrated  # + one rubric per cell
    with lock:
        shared = [ids for ids in steps if {kinds.get(i) for i in ids} >= {"judge", "generation"}]
    assert shared, "no engine step decoded a judge request together with a generation"
    rubric = evaluation.cells[0].grading.component_results[1]
    assert rubric.assertion.type == "llm-rubric" and rubric.judge and rubric.judge[0].reply


def test_a_new_evaluation_from_panes_has_a_variant_per_pane_and_a_case_per_vars_row(loaded_window, loop, tmp_path):
    window = loaded_window
    for pane, temperature in zip(window.session.panes, (0.0, 0.8), strict=True):
        pane.draft, pane.max_tokens = "Name a {{thing}} in one word.", 6
        pane.sampling = dataclasses.replace(pane.sampling, temperature=temperature, seed=4)
    (tmp_path / "vars.csv").write_text("thing,__expected\nfruit,icontains:a\ncolour,\n", encoding="utf-8")
    evaluation = window.evals.new_from_panes(tmp_path / "vars.csv")
    assert evaluation is window.session.evaluation and window.eval_dock.isVisible()
    assert [v.label for v in evaluation.variants] == ["Pane 1", "Pane 2"]
    assert [v.sampling["temperature"] for v in evaluation.variants] == [0.0, 0.8]
    assert [c.vars for c in evaluation.cases] == [{"thing": "fruit"}, {"thing": "colour"}]
    wait_until(loop, lambda: finished(window), timeout=180)
    assert all(c.output and c.generated_tokens <= 6 for c in evaluation.cells)
    assert [c.status for c in evaluation.row(1)] == ["pass", "pass"]  # no checks: it passes
    assert window.evals.new_from_panes(tmp_path / "missing.csv") is None  # explained; the evaluation stays
    assert window.session.evaluation is evaluation and "missing.csv" in window.messages[-1]


def test_similar_runs_in_the_window_on_the_embedder_of_the_settings(loaded_window, loop, tmp_path):
    """echo cells (the output is the prompt) graded by `similar` on the main model, the default embedder (weak,
    and the status bar says so): the same text is similar (cosine 1), so `not-similar` to it fails."""
    window = loaded_window
    notes = []
    window.evals.run_control.sig_status.connect(notes.append)
    config = {"prompts": ["Say {{word}}"], "providers": ["echo"],
              "tests": [{"vars": {"word": "rain"}, "assert": [{"type": "similar", "value": "Say rain"}]},
                        {"vars": {"word": "snow"}, "assert": [{"type": "not-similar", "value": "Say snow"}]}]}
    assert window.evals.open_config(write_config(tmp_path, config)), window.messages
    wait_until(loop, lambda: finished(window), timeout=120)
    evaluation = window.session.evaluation
    first, second = evaluation.cell(0, 0), evaluation.cell(1, 0)
    assert first.status == "pass" and first.grading.component_results[0].score > 0.999
    assert second.status == "fail" and "greater than or equal to threshold 0.75" in second.grading.reason
    assert any("weak embedder" in note for note in notes)
