"""Chorus's verdicts on javascript / python checks and transforms equal promptfoo 0.123.1's on the same outputs:
pass, score and reason of every assertion (a reason with a stack trace up to the trace, whose frames are Node's).
promptfoo's verdicts were recorded by scripts/promptfoo_code_parity.py (the real promptfoo, on Node) into
tests/fixtures/code_parity/expected.json; this test needs no Node."""

import json
from pathlib import Path

import pytest

from tests.cli.test_eval_cli import chorus_eval, results

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "code_parity"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))["tests"]


def comparable(reason: str) -> str:
    return reason.split("\nStack Trace:")[0]


@pytest.fixture(scope="module")
def chorus_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("parity") / "results.json"
    run = chorus_eval(FIXTURE / "promptfooconfig.yaml", "-o", out, "--allow-code")
    assert run.returncode in (0, 100), run.stderr
    return {row["testCase"]["description"]: row for row in results(out)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdicts_equal_promptfoos(chorus_rows, name):
    expected, row = EXPECTED[name], chorus_rows[name]
    assert row["success"] == expected["pass"] and row["score"] == pytest.approx(expected["score"]), row
    assert row["failureReason"] == expected["failure"]  # 0 passed, 1 failed, 2 an error
    got = [{"pass": c["pass"], "score": pytest.approx(c["score"]), "reason": comparable(c["reason"]),
            "stack_trace": "\nStack Trace:" in c["reason"]} for c in row["gradingResult"]["componentResults"]]
    assert got == expected["components"]
