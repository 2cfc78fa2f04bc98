"""Numbers (Wilson intervals, column stats, filters, exit codes) and output files (results.json, CSV, HTML, JUnit),
on an evaluation run end to end through the pure cell steps with the `echo` provider (output = the prompt)."""

import csv
import io
import json
import re

import msgspec
import pytest
import yaml
from junitparser import Error, Failure, JUnitXml

from app.evaluate import cells, load_config, stats, write_outputs
from app.evaluate.reports import escape_formula
from app.evaluate.scoring import grade
from app.session import evaluation_file
from app.session.evaluation import JudgeCalibration


@pytest.mark.parametrize("successes, n, low, high", [
    (8, 10, 0.4902, 0.9433), (0, 10, 0.0, 0.2775), (10, 10, 0.7225, 1.0), (50, 100, 0.4038, 0.5962),
    (1, 1, 0.2065, 1.0), (3, 7, 0.1582, 0.7495),
])
def test_wilson_interval_known_values(successes, n, low, high):
    interval = stats.wilson_interval(successes, n)
    assert interval == pytest.approx((low, high), abs=5e-5)


def test_wilson_interval_of_nothing():
    assert stats.wilson_interval(0, 0) is None


def run_echo(evaluation, judge_replies=None, cached=()):
    """Every cell through prepare → start → grade → conclude, as an executor would (echo needs no model)."""
    for cell in evaluation.cells:
        prepared = cells.prepare(evaluation, cell)
        cells.start(cell, prepared)
        cell.latency_ms = None if (cell.case, cell.variant) in cached else 12.0
        cell.result.stream(ttft_s=0.01, decode_tps=100.0, prompt_tokens=5, generated_tokens=7)
        graded = cells.grader(evaluation, cell)
        pending = graded.start()
        while pending:
            call = pending.pop(0)
            pending += graded.reply(call.key, (judge_replies or {}).get(cell.case, '{"pass": true}'))
        cells.conclude(cell, graded)
    return evaluation


@pytest.fixture
def evaluation(tmp_path):
    data = {"description": "echo suite",
            "prompts": ["{{name}} says hi", {"raw": "=SUM({{name}})", "label": "formula"}],
            "providers": [{"id": "echo", "label": "A"}],
            "tests": [
                {"description": "both pass", "vars": {"name": "Ada"},
                 "assert": [{"type": "contains", "value": "Ada", "metric": "named"}]},
                {"description": "disagree", "vars": {"name": "Bob"}, "threshold": 0.6,
                 "assert": [{"type": "contains", "value": "says"}, {"type": "llm-rubric", "value": "polite"}]},
                {"description": "error", "vars": {"name": "Cy"}, "assert": [{"type": "latency", "threshold": 50}]},
                {"description": "both fail", "vars": {"name": "Di"}, "assert": [{"type": "contains", "value": "zzz"}]},
            ]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(data))
    evaluation = load_config(path).evaluation()
    return run_echo(evaluation, {1: '{"reason": "rude", "pass": false, "score": 0.25}'}, cached={(2, 1)})


def statuses(evaluation):
    return [[c.status for c in evaluation.row(case)] for case in range(len(evaluation.cases))]


def test_run_statuses(evaluation):
    assert statuses(evaluation) == [["pass", "pass"], ["pass", "fail"], ["pass", "error"], ["fail", "fail"]]
    bob = evaluation.cell(1, 0).grading
    assert bob.score == 0.625 and bob.reason == "Aggregate score 0.63 ≥ 0.6 threshold"  # toFixed rounds half up
    cached = evaluation.cell(2, 1)  # latency on a result not generated now: ERROR, not FAIL
    assert "cached results" in cached.error and cached.failure_reason == 2 and cached.grading is None


def test_column_stats_and_filters(evaluation):
    matrix = stats.matrix(evaluation)
    first, second = (column.stats for column in matrix.columns)
    assert (first.passed, first.failed, first.errors) == (3, 1, 0)
    assert first.pass_rate == 0.75 and first.ci == pytest.approx(stats.wilson_interval(3, 4))
    assert first.mean_score == pytest.approx((1 + 0.625 + 1 + 0) / 4)
    assert first.named_scores == {"named": 1.0}
    assert (first.mean_ttft_s, first.mean_decode_tps, first.generated_tokens) == (0.01, 100.0, 28)
    assert (second.passed, second.failed, second.errors) == (1, 2, 1)
    assert second.summary().startswith("1/4 pass (25%, 95% CI")
    assert [r.case for r in stats.matrix(evaluation, only="failures").rows] == [1, 2, 3]
    assert [r.case for r in stats.matrix(evaluation, only="disagreements").rows] == [1, 2]
    assert len(stats.matrix(evaluation, only="disagreements").columns) == 2  # headers still cover all rows


def test_exit_codes(evaluation, monkeypatch):
    assert stats.exit_code(evaluation) == 100
    monkeypatch.setenv("PROMPTFOO_PASS_RATE_THRESHOLD", "50")
    assert stats.exit_code(evaluation) == 0  # 4 of 8 passed
    monkeypatch.delenv("PROMPTFOO_PASS_RATE_THRESHOLD")
    for cell in evaluation.cells:
        cell.status = "pass"
    assert stats.exit_code(evaluation) == 0
    evaluation.cells[0].status = "error"
    assert stats.exit_code(evaluation) == 100  # errors count against the pass rate
    evaluation.cells[0].status = "pending"
    assert stats.exit_code(evaluation) == 100  # so do cells that never ran


def test_results_json(evaluation, tmp_path):
    write_outputs(evaluation, [tmp_path / "results.json"])
    document = json.loads((tmp_path / "results.json").read_text())
    assert set(document) == {"evalId", "results", "config", "shareableUrl", "metadata"}
    results = document["results"]
    assert results["version"] == 3 and len(results["prompts"]) == 2 and len(results["results"]) == 8
    assert (results["stats"]["successes"], results["stats"]["failures"], results["stats"]["errors"]) == (4, 3, 1)
    assert results["prompts"][0]["provider"] == "A" and results["prompts"][0]["metrics"]["testPassCount"] == 3
    assert results["prompts"][1]["metrics"]["testErrorCount"] == 1
    bob = next(r for r in results["results"] if r["testIdx"] == 1 and r["promptIdx"] == 1)
    assert bob["vars"] == {"name": "Bob"} and bob["prompt"] == {"raw": "=SUM(Bob)", "label": "formula"}
    assert bob["provider"] == {"id": "echo", "label": "A"}
    assert bob["response"]["output"] == "=SUM(Bob)" and bob["response"]["cached"] is False
    assert bob["response"]["tokenUsage"] == {"total": 12, "prompt": 5, "completion": 7, "cached": 0, "numRequests": 1}
    assert bob["success"] is False and bob["failureReason"] == 1 and bob["latencyMs"] == 12
    grading = bob["gradingResult"]
    assert grading["pass"] is False and grading["score"] == 0.125
    assert [c["assertion"]["type"] for c in grading["componentResults"]] == ["contains", "llm-rubric"]
    assert grading["componentResults"][1]["reason"] == "rude"
    assert grading["componentResults"][1]["judge"][0]["reply"].startswith('{"reason": "rude"')
    ada = next(r for r in results["results"] if r["testIdx"] == 0 and r["promptIdx"] == 0)
    assert ada["namedScores"] == {"named": 1.0} and ada["success"] is True and ada["failureReason"] == 0
    error = next(r for r in results["results"] if r["testIdx"] == 2 and r["promptIdx"] == 1)
    assert error["failureReason"] == 2 and "cached results" in error["error"] and error["gradingResult"] is None


def test_csv(evaluation, tmp_path):
    write_outputs(evaluation, [tmp_path / "table.csv"])
    rows = list(csv.reader(io.StringIO((tmp_path / "table.csv").read_text())))
    assert rows[0] == ["Description", "name", "[A] {{name}} says hi", "Status", "Score", "Named Scores",
                       "Metric: named", "Grader Reason", "Comment", "[A] formula", "Status", "Score", "Named Scores",
                       "Metric: named", "Grader Reason", "Comment"]
    assert rows[1][:9] == ["both pass", "Ada", "Ada says hi", "PASS", "1.00", '{"named": 1.0}', "1.00",
                           "All assertions passed", ""]
    assert rows[1][9] == "'=SUM(Ada)"  # formula-escaped
    assert rows[2][3:5] == ["PASS", "0.63"] and rows[2][10:12] == ["FAIL", "0.13"]
    assert rows[3][10] == "ERROR" and "cached results" in rows[3][14]
    assert escape_formula("-12.5") == "-12.5" and escape_formula("-x") == "'-x" and escape_formula("@a") == "'@a"


def test_html_is_one_self_contained_file(evaluation, tmp_path):
    write_outputs(evaluation, [tmp_path / "report.html"])
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert not re.search(r"<script|<link|<img|\bsrc=|\bhref=|url\(", page)
    assert page.count("[PASS]") == 4 and page.count("[FAIL]") == 3 and page.count("[ERROR]") == 1
    assert "Bob says hi" in page and "=SUM(Ada)" in page
    assert "3/4 pass (75%, 95% CI 30%–95%)" in page


def test_junit_xml_reads_with_a_junit_parser(evaluation, tmp_path):
    write_outputs(evaluation, [tmp_path / "junit.xml"])
    xml = JUnitXml.fromfile(str(tmp_path / "junit.xml"))
    suites = list(xml)
    assert [s.name for s in suites] == ["[A] {{name}} says hi", "[A] formula"]
    assert (suites[0].tests, suites[0].failures, suites[0].errors) == (4, 1, 0)
    assert (suites[1].tests, suites[1].failures, suites[1].errors) == (4, 2, 1)
    cases = list(suites[1])
    assert [[type(r) for r in case.result] for case in cases] == [[], [Failure], [Error], [Failure]]
    assert "cached results" in cases[2].result[0].message and cases[0].name == "both pass"


def test_persisted_shape_round_trips_and_resume_runs_only_unfinished(evaluation):
    evaluation.cell(1, 1).status = "running"  # it was running when the app stopped
    evaluation.cell(2, 0).status = "pending"
    data = json.loads(evaluation_file.encode(evaluation))
    assert data["format"] == "chorus-evaluation" and data["version"] == 2 and data["calibrations"] == []
    assert evaluation_file.decode(json.dumps({**data, "version": 1})).calibrations == []  # older files load
    evaluation.calibrations = [JudgeCalibration(judge="judge:local", format="llm-rubric", name="SmolLM2",
                                                correct=4, total=10, done=True, misses=["a"])]
    assert evaluation_file.decode(evaluation_file.encode(evaluation)).calibrations == evaluation.calibrations
    assert data["cases"][1]["assert"][1]["type"] == "llm-rubric" and "pass" in data["cells"][0]["grading"]
    loaded = evaluation_file.decode(json.dumps(data))
    assert [(c.case, c.variant) for c in loaded.unfinished()] == [(1, 1), (2, 0)]
    assert loaded.cell(0, 0).grading == evaluation.cell(0, 0).grading
    assert loaded.cell(0, 0).output == evaluation.cell(0, 0).output
    assert loaded.cell(1, 1).status == "pending"
    with pytest.raises(msgspec.ValidationError, match="format"):
        evaluation_file.decode(json.dumps({**data, "format": "something-else"}))


def test_grade_helper_matches_cell_steps(evaluation):
    cell = evaluation.cell(0, 0)
    case = evaluation.cases[0]
    from app.evaluate.checks import Output
    assert grade(case, Output(text=cell.output), cell.prompt).passed


def test_select_best_after_the_row(tmp_path):
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump({"prompts": ["Hi {{n}}", "Hello {{n}}!"], "providers": ["echo"], "tests": [
        {"vars": {"n": "Al"}, "assert": [{"type": "contains", "value": "H"}, {"type": "select-best",
                                                                              "value": "most {{tone}}"}]},
        {"vars": {"n": "Bo", "tone": "warm"}, "assert": [{"type": "select-best", "value": "most {{tone}}"}]}]}))
    evaluation = load_config(path).evaluation()
    assert cells.select_best_call(evaluation, 0) is None  # the row has not run
    run_echo(evaluation)
    assert statuses(evaluation) == [["pass", "pass"], ["pass", "pass"]]  # select-best waits for the row
    call = cells.select_best_call(evaluation, 1)
    text = call.request.messages[0]["content"]
    assert "criteria: most warm" in text and '<Text index="1">\nHello Bo!\n</Text>' in text
    cells.apply_select_best(evaluation, 1, 0, "1")
    assert statuses(evaluation)[1] == ["fail", "pass"]
    assert cells.select_best_call(evaluation, 1) is None  # judged once: a resume does not ask again
    loser = evaluation.cell(1, 0).grading
    assert loser.reason == "Output not selected: most warm" and loser.score == 0.0
    cells.apply_select_best(evaluation, 0, 0, "", error="judge down")
    assert statuses(evaluation)[0] == ["error", "error"] and "judge down" in evaluation.cell(0, 0).error


def test_cells_are_evented_and_a_broken_file_is_refused(evaluation):
    cell = evaluation.cell(0, 0)
    seen = []
    cell.events.status.connect(lambda new, old=None: seen.append(new))
    prepared = cells.prepare(evaluation, cell)
    cells.start(cell, prepared)
    graded = cells.grader(evaluation, cell)
    graded.start()
    cells.conclude(cell, graded)
    assert seen == ["running", "grading", "pass"]  # echo: the output is known at once
    data = json.loads(evaluation_file.encode(evaluation))
    with pytest.raises(ValueError, match="cover cases"):
        evaluation_file.decode(json.dumps({**data, "cells": data["cells"][:-1]}))
