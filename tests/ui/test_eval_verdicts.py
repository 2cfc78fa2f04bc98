"""A verdict that rests on an unreliable judge is neither a pass nor a fail everywhere the Evaluation dock counts or
filters: the Failures filter leaves such cells out (it agrees with the summary's "0 failed · N unreliable"), and
such a verdict makes no disagreement. Echo cells graded through the pure cell steps (no model adds anything)."""

from app.evaluate import read_config, stats
from app.evaluate.calibration import Reliability
from app.session.evaluation import JudgeCalibration
from app.ui.evaluate.view import EvalView
from tests.evaluate.test_stats_and_outputs import run_echo

UNRELIABLE = JudgeCalibration(judge="judge:local", format="llm-rubric", name="j", correct=4, total=10, done=True)


def judged(tmp_path):
    """Two variants ("Ada says hi", "Ada waves") × three cases, graded by a judge that says fail on case 0."""
    evaluation = read_config({
        "prompts": ["{{name}} says hi", "{{name}} waves"], "providers": ["echo"],
        "tests": [
            {"vars": {"name": "Ada"}, "assert": [{"type": "llm-rubric", "value": "polite"}]},  # the judge: fail
            {"vars": {"name": "Bob"}, "assert": [{"type": "contains", "value": "says"},  # Bob waves: a sure fail
                                                  {"type": "llm-rubric", "value": "polite"}]},  # the judge: pass
            {"vars": {"name": "Cy"}, "assert": [{"type": "contains", "value": "Cy"}]},  # no judge: both pass
        ]}, tmp_path).evaluation()
    return run_echo(evaluation, judge_replies={0: '{"pass": false}', 1: '{"pass": true}'})


def test_the_failures_filter_leaves_out_verdicts_of_an_unreliable_judge(qtbot, tmp_path):
    evaluation = judged(tmp_path)
    assert [[c.status for c in evaluation.row(case)] for case in range(3)] == [
        ["fail", "fail"], ["pass", "fail"], ["pass", "pass"]]
    view = EvalView()
    qtbot.addWidget(view)
    view.model.set_evaluation(evaluation)
    view.set_filter("failures")
    assert view.visible_cases() == [0, 1]  # a reliable judge: its two fails are failures
    view.set_filter("disagreements")
    assert view.visible_cases() == [1]

    evaluation.calibrations = [UNRELIABLE]  # the judge failed its calibration: its verdicts stop counting
    view.model.flush()
    reliability = Reliability(evaluation)
    assert [[reliability.unreliable(c) for c in evaluation.row(case)] for case in range(3)] == [
        [True, True], [True, False], [False, False]]
    assert view.summary.text().startswith("2 passed · 1 failed · 0 errors · 3 unreliable")
    view.set_filter("failures")
    assert view.visible_cases() == [1]  # Bob's "waves" failed `contains`, whatever the judge said
    assert stats.failing(view.model.row(0), reliability) is False
    # Bob: the judge's "pass" for "Bob says hi" is not a pass, so it does not disagree with the sure fail beside it
    view.set_filter("disagreements")
    assert view.visible_cases() == [] and view.empty_note.text().startswith("No disagreements")
    assert [r.case for r in stats.matrix(evaluation, only="failures").rows] == [1]
    assert [r.case for r in stats.matrix(evaluation, only="disagreements").rows] == []


def test_results_json_counts_each_variant_as_the_dock_does(tmp_path):
    from app.evaluate.results_json import results_document

    evaluation = judged(tmp_path)
    evaluation.calibrations = [UNRELIABLE]
    document = results_document(evaluation)["results"]
    counts = [(p["metrics"]["testPassCount"], p["metrics"]["testFailCount"], p["metrics"]["testErrorCount"])
              for p in document["prompts"]]
    columns = [(c.stats.passed, c.stats.failed, c.stats.errors) for c in stats.matrix(evaluation).columns]
    assert counts == columns == [(1, 0, 0), (1, 1, 0)]
    assert [p["metrics"]["testUnreliableCount"] for p in document["prompts"]] == [2, 1]
    assert document["stats"]["failures"] == 1 and document["stats"]["unreliable"] == 3
