"""assertScoringFunction: a JavaScript or Python function scores a test from its named scores, as promptfoo's
AssertionsResult.testResult(scoringFunction) does; it is code, so it runs only once allowed (a CodeRunner)."""

import pytest
import yaml

from app.evaluate import load_config
from app.evaluate.check_types import CheckError, Output
from app.evaluate.code_checks import CodeRunner
from app.evaluate.errors import ConfigError
from app.evaluate.scoring import CellGrader

FILES = {
    "score.js": "module.exports = (namedScores, context) => ({pass: Math.min(...Object.values(namedScores)) >= "
                "(context.threshold ?? 0.5), score: Math.min(...Object.values(namedScores)), reason: "
                "`min of ${Object.keys(namedScores).sort().join('+')} over ${context.componentResults.length}`});\n"
                "module.exports.broken = () => { throw new Error('no scores'); };\n"
                "module.exports.plain = () => 0.5;\n",
    "score.py": "def calculate(named_scores, context):\n"
                "    a = named_scores.get('a', 0)\n"
                "    return {'pass': a >= context.get('threshold', 0.7), 'score': a, 'reason': f'a only: {a}'}\n",
}


def suite(tmp_path, default=None, own=None):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    asserts = [{"type": "contains", "value": "x", "metric": "a"}, {"type": "contains", "value": "y", "metric": "b"}]
    data = {"prompts": ["Q"], "providers": ["echo"], "tests": [{"assert": asserts}]}
    if default:
        data["defaultTest"] = {"assertScoringFunction": default}
    if own:
        data["tests"][0]["assertScoringFunction"] = own
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return load_config(tmp_path / "promptfooconfig.yaml")


def score(tmp_path, output: str, default=None, own=None, code=True):
    loaded = suite(tmp_path, default, own)
    runner = CodeRunner(tmp_path) if code else None
    try:
        grader = CellGrader(loaded.cases[0], Output(text=output), "Q", tmp_path, code=runner)
        assert grader.start() == [] and grader.scores_with_code
        return grader.result()
    finally:
        if runner is not None:
            runner.close()


def test_a_javascript_function_scores_the_test_from_its_named_scores(tmp_path):
    result = score(tmp_path, "x y", default="file://score.js")
    assert (result.passed, result.score, result.reason) == (True, 1.0, "min of a+b over 2")
    result = score(tmp_path, "x", default="file://score.js")  # b failed: the summed verdict would say so too
    assert (result.passed, result.score, result.reason) == (False, 0.0, "min of a+b over 2")
    assert result.named_scores == {"a": 1.0, "b": 0.0} and len(result.component_results) == 2


def test_the_tests_own_python_function_wins_over_the_default(tmp_path):
    result = score(tmp_path, "x", default="file://score.js", own="file://score.py:calculate")
    assert (result.passed, result.score, result.reason) == (True, 1.0, "a only: 1")  # b's failure ignored


def test_a_failing_or_malformed_function_fails_the_test(tmp_path):
    result = score(tmp_path, "x y", own="file://score.js:broken")
    assert (result.passed, result.score) == (False, 0.0)
    assert result.reason.startswith("Scoring function error: ") and "no scores" in result.reason
    result = score(tmp_path, "x y", own="file://score.js:plain")
    assert result.reason == "Scoring function error: assertion scoring function must return a GradingResult"
    with pytest.raises(CheckError, match="not allowed"):
        score(tmp_path, "x y", own="file://score.js", code=False)


def test_what_the_config_reader_refuses_and_names(tmp_path):
    (tmp_path / "score.ts").write_text("export default () => 1;\n", encoding="utf-8")
    for ref, expected in (("file://score.ts", "TypeScript"), ("file://none.js", "no such file"),
                          ("score.js", "file://path.js")):
        with pytest.raises(ConfigError) as caught:
            suite(tmp_path, own=ref)
        assert any(line.startswith("tests[0].assertScoringFunction: ") and expected in line
                   for line in caught.value.problems), caught.value.problems
    assert any("assertScoringFunction: the file" in line for line in suite(tmp_path, default="file://score.js").code)


def test_the_runner_scores_with_the_function_off_its_thread(make_engine, tmp_path):
    from app.evaluate.runner import EvaluationRunner
    from app.session import SessionRunner
    from tests.conftest import EngineSubmitter

    evaluation = suite(tmp_path, default="file://score.py:calculate").evaluation()
    engine = make_engine(n_slots=1)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    code = CodeRunner(tmp_path)
    try:
        evaluation_runner = EvaluationRunner(evaluation, runner, lambda target: "local", tmp_path, code=code)
        evaluation_runner.start()
        assert evaluation_runner.drive(timeout=120)
    finally:
        code.close()
    cell, = evaluation.cells  # echo's output "Q" holds neither x nor y
    assert (cell.status, cell.grading.score, cell.grading.reason) == ("fail", 0.0, "a only: 0")
