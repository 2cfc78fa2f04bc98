"""Judge calibration: the calibration set (a promptfoo config in resources/), which verdicts rest on an unreliable
judge (and so are not counted), and a judge calibrated once per session and format, not per cell or per run,
through the SessionRunner like any judge call (the real SmolLM2 model answers)."""

from pathlib import Path

import pytest

from app.evaluate import calibration, load_config, read_config, stats
from app.evaluate.calibration_run import CalibrationCache, CalibrationRun
from app.evaluate.runner import EvaluationRunner
from app.session import SessionRunner
from app.session.evaluation import JudgeCalibration
from tests.conftest import EngineSubmitter
from tests.evaluate.test_stats_and_outputs import run_echo

ROOT = Path(__file__).resolve().parents[2]


def test_the_calibration_set_is_a_promptfoo_config_with_obvious_passes_and_fails_for_every_kind():
    suite = load_config(ROOT / "resources" / "calibration" / "judges.yaml")  # the evaluation's own loader
    assert calibration.calibration_file() == ROOT / "resources" / "calibration" / "judges.yaml"
    for kind in ("llm-rubric", "factuality", "g-eval"):
        run = CalibrationRun(calibration.Need(None, kind, None, "judge:local", kind), "x", suite)
        expected = [answer for _label, answer, _grader in run.questions.values()]
        assert expected and expected.count(True) == expected.count(False), kind  # as many passes as fails
    run = CalibrationRun(calibration.Need(None, "select-best", None, "judge:local", "select-best"), "x", suite)
    calls = run.start()
    assert len(calls) == 2 * sum(c.assertions[0].type == "select-best" for c in suite.cases)  # both orders
    first, swapped = calls[0].request.messages[0]["content"], calls[1].request.messages[0]["content"]
    assert first.index("Tokyo") < first.index("Madrid") and swapped.index("Madrid") < swapped.index("Tokyo")


def test_a_judge_that_always_says_pass_is_unreliable():
    need = calibration.Need(None, "llm-rubric", None, "judge:local", "llm-rubric")
    run = CalibrationRun(need, "yes-man", calibration.calibration_suite())
    for call in run.start():
        run.reply(call.key, '{"reason": "fine", "pass": true, "score": 1}')
    result = run.result()
    assert run.done and (result.correct, result.total) == (5, 10) and not calibration.reliable(result)
    assert calibration.describe(result) == ("judge: yes-man, 5/10 on llm-rubric calibration — verdicts "
                                            "unreliable")


def suite_with_judged_cells(tmp_path):
    return read_config({
        "prompts": ["{{name}} says hi"], "providers": ["echo"],
        "tests": [
            {"vars": {"name": "Ada"}, "assert": [{"type": "llm-rubric", "value": "polite"}]},  # the judge decides
            {"vars": {"name": "Bob"}, "assert": [{"type": "contains", "value": "zzz"},  # fails whatever it says
                                                  {"type": "llm-rubric", "value": "polite"}]},
            {"vars": {"name": "Cy"}, "threshold": 0.5,  # a threshold: the judge's score decides
             "assert": [{"type": "contains", "value": "zzz"}, {"type": "llm-rubric", "value": "polite"}]},
            {"vars": {"name": "Di"}, "assert": [{"type": "contains", "value": "Di"}]},  # no judge
        ]}, tmp_path).evaluation()


@pytest.mark.parametrize("correct, unreliable", [(4, [True, False, True, False]), (8, [False] * 4)])
def test_verdicts_resting_on_an_unreliable_judge_are_not_counted(tmp_path, correct, unreliable):
    evaluation = run_echo(suite_with_judged_cells(tmp_path))
    assert [c.status for c in evaluation.cells] == ["pass", "fail", "pass", "pass"]
    before = stats.totals(evaluation)
    evaluation.calibrations = [JudgeCalibration(judge="judge:local", format="llm-rubric", name="j",
                                                correct=correct, total=10, done=True)]
    reliability = calibration.Reliability(evaluation)
    assert [reliability.unreliable(c) for c in evaluation.cells] == unreliable
    total = stats.totals(evaluation)
    if correct == 8:  # at the threshold: counted as before
        assert (total.successes, total.failures, total.unreliable) == (before.successes, before.failures, 0)
        assert stats.exit_code(evaluation) == 100 and "unreliable" not in stats.exit_explanation(evaluation)
    else:
        assert (total.successes, total.failures, total.unreliable) == (1, 1, 2)
        assert total.pass_rate == 25.0 and stats.exit_code(evaluation) == 100
        assert "2 verdicts by an unreliable judge are not counted as passes" in stats.exit_explanation(evaluation)
        column = stats.matrix(evaluation).columns[0].stats
        assert (column.passed, column.failed, column.unreliable, column.finished) == (1, 1, 2, 4)
        assert [c.correct for c in column.judges] == [4]


def test_a_judge_still_being_calibrated_does_not_count_yet(tmp_path):
    evaluation = run_echo(suite_with_judged_cells(tmp_path))
    evaluation.calibrations = [JudgeCalibration(judge="judge:local", format="llm-rubric", name="j")]
    assert stats.totals(evaluation).unreliable == 2
    assert calibration.describe(evaluation.calibrations[0]) == "judge: j, being calibrated on llm-rubric"


def test_the_judge_is_calibrated_once_per_session_and_format_on_the_real_model(make_engine, tmp_path):
    engine = make_engine(n_slots=4, n_ctx_per_slot=1024)
    submitter = EngineSubmitter(engine)
    runner = SessionRunner(submitter)
    engine.subscribe(runner.feed)
    asked = []
    submit = submitter.submit
    submitter.submit = lambda request, backend="local": asked.append(request) or submit(request, backend)
    cache = CalibrationCache()
    for _run in range(2):  # two evaluations in one session (the window's EvalRun keeps its cache)
        evaluation = suite_with_judged_cells(tmp_path)
        evaluation_runner = EvaluationRunner(evaluation, runner, lambda target: "local", tmp_path,
                                             calibrations=cache)
        evaluation_runner.start()
        assert evaluation_runner.drive(timeout=600)
        [found] = evaluation.calibrations
        assert found.done and found.total == 10 and found.format == "llm-rubric" and found.name == "local"
        assert all(c.finished for c in evaluation.cells)
    judge_calls = [r for r in asked if r.json_schema is not None]
    assert len(judge_calls) == 10 + 2 * 3  # the calibration once, then the three judged cells of each run
