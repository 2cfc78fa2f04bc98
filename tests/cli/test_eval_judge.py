"""`python -m app eval` says when its judge cannot be trusted: the judge answers the calibration set first
(resources/calibration/judges.yaml) and the table, results.json and the exit code's explanation give its score.
The same config is judged by the embedded SmolLM2-135M and by Gemma 3 270M (the largest real models this test
machine has: both unreliable, 4/10 and 5/10 on 2026-11-26) and by a capable judge (tests/fixtures/judge_standin.py,
a real HTTP server standing in for a capable judge model, which cannot run on this CPU machine)."""

import csv
import io
import json
import re

import pytest

from tests.cli.test_eval_cli import chorus_eval, write_config
from tests.fixtures.judge_standin import RuleJudge

# Outputs given (providerOutput), so only the judge decides.
CONFIG = (
    "prompts: ['Answer the question {{q}}']\n"
    "providers: [echo]\n"
    "tests:\n"
    "  - vars: {q: capital of France}\n"
    "    providerOutput: The capital of France is Paris.\n"
    "    assert: [{type: icontains, value: paris},\n"
    "             {type: llm-rubric, value: It names Paris as the capital of France}]\n"
    "  - vars: {q: capital of Italy}\n"
    "    providerOutput: The capital of Italy is Rome.\n"
    "    assert: [{type: llm-rubric, value: It names Rome as the capital of Italy}]\n"
    "  - vars: {q: capital of Spain}\n"
    "    providerOutput: The capital of Spain is Madrid.\n"
    "    assert: [{type: contains, value: Lisbon}, {type: llm-rubric, value: It names Madrid}]\n"
)


@pytest.fixture
def rule_judge():
    server = RuleJudge()
    yield server
    server.close()


def test_the_embedded_judge_is_reported_unreliable_with_its_calibration_score(tmp_path):
    config = write_config(tmp_path, CONFIG)
    run = chorus_eval(config, "--judge", "local", "-o", tmp_path / "results.json", "-o", tmp_path / "report.html",
                      "-o", tmp_path / "junit.xml", "-o", tmp_path / "results.csv")
    assert run.returncode == 100, run.stdout + run.stderr
    found = re.search(r"judge: SmolLM2-135M-Instruct\.Q4_1, (\d+)/(\d+) on llm-rubric calibration — verdicts "
                      r"unreliable", run.stdout)
    assert found, run.stdout
    correct, total = int(found.group(1)), int(found.group(2))
    assert total == 10 and correct < 8
    head, row = run.stdout.splitlines()[0], run.stdout.splitlines()[2]
    assert "Unreliable" in head and "Judge (calibration)" in head
    assert f"{correct}/10 unreliable" in row
    # the two cases the judge decides are not counted; the Spain case fails on `contains` whatever it said
    assert "0 passed, 1 failed, 0 errors, 2 unreliable" in run.stdout
    assert re.search(r"exit 100: .*2 verdicts by an unreliable judge are not counted as passes", run.stdout)
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    [calibration] = document["metadata"]["judgeCalibration"]
    assert calibration["correct"] == correct and calibration["total"] == 10 and calibration["reliable"] is False
    assert len(calibration["misses"]) == 10 - correct
    assert [r["unreliableVerdict"] for r in document["results"]["results"]] == [True, True, False]
    stats = document["results"]["stats"]
    assert (stats["successes"], stats["failures"], stats["unreliable"]) == (0, 1, 2)
    assert "unreliable judge" in document["metadata"]["exitCodeExplanation"]
    report = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert report.count("UNRELIABLE JUDGE]") == 2 and "verdicts unreliable" in report
    # an unreliable judge's verdict reads neither PASS nor FAIL, as the totals count it
    assert report.count("[UNRELIABLE JUDGE]") == 2 and report.count("[FAIL]") == 1 and "[PASS" not in report
    rows = list(csv.DictReader(io.StringIO((tmp_path / "results.csv").read_text(encoding="utf-8"))))
    assert [row["Status"] for row in rows] == ["UNRELIABLE", "UNRELIABLE", "FAIL"]
    junit = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert junit.count("<skipped") == 2 and 'failures="1"' in junit  # the Spain case's `contains` fail counts


def test_a_judge_that_scores_well_on_calibration_counts(tmp_path, rule_judge):
    config = write_config(tmp_path, CONFIG.replace("value: Lisbon", "value: Madrid"))
    run = chorus_eval(config, "--judge", rule_judge.url, "-o", tmp_path / "results.json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "judge: rule-judge, 10/10 on llm-rubric calibration" in run.stdout
    assert "unreliable" not in run.stdout.lower()
    assert "3 passed, 0 failed, 0 errors" in run.stdout
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert document["metadata"]["judgeCalibration"][0]["reliable"] is True
    assert not any(r["unreliableVerdict"] for r in document["results"]["results"])
    assert rule_judge.asked == 10 + 3  # the calibration once, then one call per judged cell


def test_gemma_270m_is_no_capable_judge_either(tmp_path, gemma):
    config = write_config(tmp_path, CONFIG)
    run = chorus_eval(config, "--judge", gemma, "-o", tmp_path / "results.json")
    assert run.returncode == 100, run.stdout + run.stderr
    found = re.search(r"judge: gemma-3-270m-q4_k_m, (\d+)/10 on llm-rubric calibration — verdicts unreliable",
                      run.stdout)
    assert found and int(found.group(1)) < 8, run.stdout
