"""EvaluationRunner on the real engine: the concurrency bound holds for generations and judges together, cells
are reported as they change, a select-best row is judged once, and cancel leaves cut-short cells pending for a
resume."""

import dataclasses

from app.evaluate import read_config
from app.evaluate.routes import needed_targets
from app.evaluate.runner import EvaluationRunner
from app.session import SessionRunner
from app.session.evaluation import BackendTarget, cell_change
from tests.conftest import EngineSubmitter


def evaluation_for(model_path, tmp_path, max_tokens: int, asserts: str, extra_provider: dict | None = None):
    providers = [{"id": f"file://{model_path}", "label": "greedy", "config": {"temperature": 0,
                                                                              "max_tokens": max_tokens}},
                 {"id": f"file://{model_path}", "label": "warm", "config": {"temperature": 0.9, "seed": 2,
                                                                            "max_tokens": max_tokens}}]
    config = {"prompts": [{"raw": "Write about {{topic}}"}], "providers": providers + [extra_provider] * bool(
        extra_provider), "tests": [{"vars": {"topic": t}, "assert": asserts} for t in ("rain", "bread")]}
    return read_config(config, tmp_path).evaluation()


def runner_on(engine):
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    return runner


def test_bound_signals_and_select_best_once(make_engine, model_path, tmp_path):
    asserts = [{"type": "contains", "value": "a"}, {"type": "select-best", "value": "the most vivid"}]
    evaluation = evaluation_for(model_path, tmp_path, 6, asserts)
    assert [t.kind for t in needed_targets(evaluation, tmp_path)] == ["local", "local"]  # the variants', the judge
    engine = make_engine(n_slots=4)
    runner = runner_on(engine)
    most, submitted = [0], []
    runner.events.started.connect(lambda _pane, _result: (submitted.append(1), most.__setitem__(0, max(
        most[0], runner.active))))
    evaluation_runner = EvaluationRunner(evaluation, runner, lambda target: "local", tmp_path, max_concurrency=2)
    changed, finished = [], []
    evaluation.events.all.connect(lambda info: info.path[-1].attr == "status" and changed.append(
        (evaluation.cells[cell_change(info)].case, evaluation.cells[cell_change(info)].variant, info.args[0])))
    evaluation_runner.events.finished.connect(lambda: finished.append(1))
    evaluation_runner.start()
    # the judge's calibration questions go first (4 for select-best: two pairs, each in both orders); cells wait
    assert runner.active == 2 and [c.status for c in evaluation.cells].count("pending") == 4
    assert evaluation_runner.drive(timeout=600)
    assert most[0] == 2 and finished == [1] and evaluation.duration_s > 0
    [calibrated] = evaluation.calibrations
    assert calibrated.format == "select-best" and calibrated.done and calibrated.total == 4
    assert len(submitted) == 4 + 4 + 2  # calibration, 4 generations, then one select-best judge per row
    assert all(cell.finished and cell.status != "error" for cell in evaluation.cells), [
        c.error for c in evaluation.cells]
    for cell in evaluation.cells:
        reported = [status for case, variant, status in changed if (case, variant) == (cell.case, cell.variant)]
        assert reported[:2] == ["running", "grading"] and reported[-1] == cell.status  # last: the row's verdict
        kinds = [c.assertion.type for c in cell.grading.component_results]
        assert kinds == ["contains", "select-best"]
        assert cell.grading.component_results[1].judge[0].asked  # every cell of the row keeps the question
    for case in range(2):
        assert sorted(c.grading.component_results[1].passed for c in evaluation.row(case)) == [False, True]


def test_cancel_leaves_cut_short_cells_pending_and_a_resume_runs_only_them(make_engine, model_path, tmp_path):
    evaluation = evaluation_for(model_path, tmp_path, 2000, [{"type": "icontains", "value": "write"}],
                                extra_provider={"id": "echo"})
    engine = make_engine(n_slots=4)
    runner = runner_on(engine)
    evaluation_runner = EvaluationRunner(evaluation, runner, lambda target: "local", tmp_path)
    evaluation_runner.start()  # the echo cells are graded at once; the model's are generating
    echo = [cell for cell in evaluation.cells if evaluation.variants[cell.variant].target.kind == "echo"]
    assert [cell.status for cell in echo] == ["pass", "pass"]
    evaluation_runner.cancel()
    assert evaluation_runner.drive(timeout=120)
    generated = [cell for cell in evaluation.cells if cell not in echo]
    assert [cell.status for cell in generated] == ["pending"] * 4
    assert evaluation.unfinished() == generated
    short = dataclasses.replace(evaluation, variants=[v.model_copy(update={"max_tokens": 3}) if v.target.kind
                                                      != "echo" else v for v in evaluation.variants])
    again = EvaluationRunner(short, runner, lambda target: "local", tmp_path)
    again.start()
    assert again.drive(timeout=300)
    assert all(cell.finished for cell in short.cells) and all(c.generated_tokens <= 3 for c in generated)
    assert [c.status for c in echo] == ["pass", "pass"]


def test_targets_and_routes_for_a_judge_provider(tmp_path):
    config = {"prompts": ["Hi {{x}}"], "providers": ["echo"],
              "tests": [{"vars": {"x": 1}, "assert": [{"type": "llm-rubric", "value": "ok",
                                                       "provider": "ollama:chat:judge"}]}]}
    evaluation = read_config(config, tmp_path).evaluation(judge="http://127.0.0.1:9/v1")
    targets = needed_targets(evaluation, tmp_path)
    assert targets == [BackendTarget(kind="server", url="http://localhost:11434/v1", model="judge",
                                     api_key_env="OLLAMA_API_KEY")]


def test_store_output_as_runs_tests_in_order_and_later_tests_see_the_output(make_engine, model_path, tmp_path):
    """promptfoo's `options.storeOutputAs`: the output is a var of the tests after it (overwriting one of that
    name), so the cells run one at a time, in the config's order."""
    config = {"prompts": ["Say {{message}}"],
              "providers": [{"id": f"file://{model_path}", "config": {"temperature": 0, "max_tokens": 3}}],
              "tests": [{"vars": {"message": "a fruit"}, "options": {"storeOutputAs": "fruit"}},
                        {"vars": {"message": "why {{fruit}}", "fruit": "overwritten"},
                         "options": {"storeOutputAs": "reason"}},
                        {"vars": {"message": "{{fruit}} / {{reason}}"},
                         "assert": [{"type": "icontains", "value": "{{fruit}}"}]}]}
    evaluation = read_config(config, tmp_path).evaluation()
    runner = runner_on(make_engine(n_slots=4))
    most = [0]
    runner.events.started.connect(lambda _pane, _result: most.__setitem__(0, max(most[0], runner.active)))
    evaluation_runner = EvaluationRunner(evaluation, runner, lambda target: "local", tmp_path)
    evaluation_runner.start()
    assert evaluation_runner.drive(timeout=300)
    first, second, third = (evaluation.cell(case, 0) for case in range(3))
    assert all(cell.output for cell in (first, second, third)), [c.error for c in evaluation.cells]
    assert most[0] == 1  # one cell at a time
    assert second.prompt == f"Say why {first.output}"
    assert third.prompt == f"Say {first.output} / {second.output}"
    assert evaluation_runner.registers == {"fruit": first.output, "reason": second.output}
    assert third.status == ("pass" if first.output.lower() in third.output.lower() else "fail")
