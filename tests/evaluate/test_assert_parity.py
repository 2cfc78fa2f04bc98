"""Chorus's verdicts on max-score, cost, webhook, is-valid-openai-function-call and provider transforms equal
promptfoo 0.123.1's on the same outputs: pass, score and reason of every assertion, and the named scores.
promptfoo's verdicts were recorded by scripts/promptfoo_code_parity.py (the real promptfoo, on Node) into
tests/fixtures/assert_parity/expected.json; this test needs no Node. The web hook is a real HTTP server on
127.0.0.1 (tests/fixtures/assert_parity/hook.py) that answers by path; the bodies it was sent must equal the
ones promptfoo sent it."""

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tests.cli.test_eval_cli import chorus_eval, results

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "assert_parity"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
# Ajv's error list and jsonschema's messages are worded differently: for these rows pass and score are compared
REASON_WORDED_DIFFERENTLY = {"arguments off the schema [openai:chat:gpt-4o-mini]"}


def _hook():
    spec = importlib.util.spec_from_file_location("hook", FIXTURE / "hook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Hook()


@pytest.fixture(scope="module")
def chorus(tmp_path_factory):
    hook = _hook()
    rows = {}
    try:
        for name in EXPECTED["configs"]:
            out = tmp_path_factory.mktemp("parity") / "results.json"
            run = chorus_eval(FIXTURE / name, "-o", out, "--allow-code",
                              env={**os.environ, "COLUMNS": "200", "PARITY_HOOK": hook.url})
            assert run.returncode in (0, 100), run.stderr
            for row in results(out):
                provider = row["provider"]
                rows[(name, f"{row['testCase']['description']} [{provider.get('label') or provider['id']}]")] = row
        yield rows, hook.bodies
    finally:
        hook.close()


CASES = sorted((name, key) for name, found in EXPECTED["configs"].items() for key in found)


@pytest.mark.parametrize(("config", "key"), CASES)
def test_verdicts_equal_promptfoos(chorus, config, key):
    expected, row = EXPECTED["configs"][config][key], chorus[0][(config, key)]
    assert row["success"] == expected["pass"] and row["score"] == pytest.approx(expected["score"]), row
    assert row["failureReason"] == expected["failure"]  # 0 passed, 1 failed, 2 an error
    grading = row.get("gradingResult") or {}
    assert (grading.get("namedScores") or {}) == pytest.approx(expected["named"])
    got = [{"pass": c["pass"], "score": pytest.approx(c["score"]), "reason": c["reason"], "stack_trace": False}
           for c in grading.get("componentResults", [])]
    if key in REASON_WORDED_DIFFERENTLY:
        got = [{**c, "reason": None} for c in got]
        expected = {**expected, "components": [{**c, "reason": None} for c in expected["components"]]}
    assert got == expected["components"]


def test_webhook_bodies_equal_promptfoos(chorus):
    def key(body):
        return json.dumps(body, sort_keys=True)
    assert sorted(map(key, chorus[1])) == sorted(map(key, EXPECTED["hook_bodies"]))
