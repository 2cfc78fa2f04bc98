"""`python -m app eval` as a user runs it: a subprocess on the real embedded model (generation and judges), its
output files, exit codes and Ctrl+C."""

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Greedy and constrained to {"answer": "yes" | "no"}: every assertion below holds whatever the model thinks.
YES_NO = ("response_format: {type: json_schema, json_schema: {schema: {type: object, properties: "
          "{answer: {enum: ['yes', 'no']}}, required: [answer]}}}")


def chorus_eval(*args, **kwargs):
    # a wide terminal, so the summary's variant names are not cut (readline in pytest exports COLUMNS=80)
    kwargs.setdefault("env", {**os.environ, "COLUMNS": "200"})
    return subprocess.run([sys.executable, "-m", "app", "eval", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, **kwargs)


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def results(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["results"]["results"]


def fruit_config(model_path, extra_assert: str = "") -> str:
    return (
        "description: fruit\n"
        "prompts:\n"
        "  - 'Is {{thing}} a fruit? Reply in JSON'\n"
        "  - 'Answer with JSON only: is {{thing}} a fruit?'\n"
        "providers:\n"
        f"  - id: file://{model_path}\n"
        "    label: greedy\n"
        f"    config: {{temperature: 0, max_tokens: 48, {YES_NO}}}\n"
        "defaultTest:\n"
        "  assert:\n"
        "    - type: is-json\n"
        "      value: {type: object, required: [answer]}\n"
        "    - type: contains-any\n"
        "      value: ['yes', 'no']\n"
        "    - type: not-equals\n"
        "      value: nothing at all\n"
        "    - type: regex\n"
        "      value: '\"answer\"'\n"
        "      metric: shape\n"
        f"{extra_assert}"
        "tests:\n"
        "  - vars: {thing: an apple}\n"
        "  - vars: {thing: a stone}\n"
        "    description: stone\n"
        "  - vars: {thing: a banana}\n")


def test_two_prompts_three_tests_all_pass_exit_0_and_outputs_written(model_path, tmp_path):
    config = write_config(tmp_path, fruit_config(model_path))
    run = chorus_eval(config, "-o", tmp_path / "results.json", "-o", tmp_path / "table.csv", "--max-concurrency", 4)
    assert run.returncode == 0, run.stdout + run.stderr
    cells = results(tmp_path / "results.json")
    assert len(cells) == 6 and all(c["success"] for c in cells)
    assert {(c["promptIdx"], c["testIdx"]) for c in cells} == {(p, t) for p in range(2) for t in range(3)}
    assert all(json.loads(c["response"]["output"])["answer"] in ("yes", "no") for c in cells)
    assert all(c["latencyMs"] > 0 and c["response"]["tokenUsage"]["completion"] > 0 for c in cells)
    assert all(c["namedScores"] == {"shape": 1.0} for c in cells)
    with open(tmp_path / "table.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 4 and rows[2][0] == "stone"
    assert [rows[0][i] for i in range(len(rows[0])) if rows[0][i].startswith("[greedy]")] == [
        "[greedy] Is {{thing}} a fruit? Reply in JSON", "[greedy] Answer with JSON only: is {{thing}} a fruit?"]
    assert all(row.count("PASS") == 2 for row in rows[1:])
    # the summary on stdout: one line per variant with its counts and pass rate, then the totals
    assert "[greedy] Is {{thing}} a fruit? Reply in JSON" in run.stdout
    assert "6 passed, 0 failed, 0 errors · pass rate 100.0%" in run.stdout
    assert "Traceback" not in run.stderr


def test_a_failing_assertion_exits_100_and_results_json_lists_it(model_path, tmp_path):
    """Two providers on the command line's model (`--model`): each keeps its label and settings."""
    config = write_config(tmp_path, (
        "prompts: ['Say hello to {{name}}']\n"
        "providers:\n"
        "  - id: openai:chat:gpt-4o-mini\n    label: short\n    config: {max_tokens: 4}\n"
        "  - id: openai:chat:gpt-4o-mini\n    label: shorter\n    config: {max_tokens: 2}\n"
        "tests:\n"
        "  - vars: {name: Ada}\n"
        "    assert: [{type: not-contains, value: zzz-never}]\n"
        "  - vars: {name: Bob}\n"
        "    description: impossible\n"
        "    assert: [{type: equals, value: zzz-never}]\n"))
    run = chorus_eval(config, "--model", model_path, "-o", tmp_path / "results.json")
    assert run.returncode == 100, run.stdout + run.stderr
    cells = results(tmp_path / "results.json")
    assert len(cells) == 4
    failed = [c for c in cells if not c["success"]]
    assert {c["provider"]["label"] for c in failed} == {"short", "shorter"}
    assert all(c["testCase"]["description"] == "impossible" and c["failureReason"] == 1 for c in failed)
    assert all(c["gradingResult"]["reason"].startswith("Expected output") and "zzz-never" in
               c["gradingResult"]["reason"] for c in failed)
    assert all(0 < c["response"]["tokenUsage"]["completion"] <= {"short": 4, "shorter": 2}[c["provider"]["label"]]
               for c in cells)
    assert "2 passed, 2 failed, 0 errors · pass rate 50.0%" in run.stdout


def test_unsupported_assertion_and_bad_key_exit_2_naming_them_before_anything_runs(tmp_path):
    config = write_config(tmp_path, (
        "prompts: ['Hi {{x}}']\n"
        "providers: [openai:chat:gpt-4o-mini]\n"
        "tests:\n"
        "  - vars: {x: 1}\n"
        "    colour: red\n"
        "    assert:\n"
        "      - type: classifier\n        value: positive\n"
        "      - type: equals\n        value: hi\n        wieght: 2\n"))
    out = tmp_path / "results.json"
    run = chorus_eval(config, "-o", out, "--server", "http://127.0.0.1:9/v1")  # never contacted
    assert run.returncode == 2, run.stdout + run.stderr
    assert "colour" in run.stderr and "wieght" in run.stderr and "'classifier'" in run.stderr
    assert "Traceback" not in run.stderr
    assert not out.exists() and run.stdout == "" and "cells started" not in run.stderr
    bad_output = chorus_eval(write_config(tmp_path, "prompts: ['Hi']\nproviders: [echo]\n"), "-o", tmp_path / "r.pdf")
    assert bad_output.returncode == 2 and ".pdf" in bad_output.stderr
    missing = chorus_eval(tmp_path / "nope.yaml")
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr and "Traceback" not in missing.stderr


def test_a_backend_or_judge_that_cannot_open_exits_2_before_anything_runs(model_path, tmp_path):
    config = write_config(tmp_path, "prompts: ['Hi {{x}}']\nproviders: [openai:chat:m]\ntests:\n  - vars: {x: 1}\n"
                                    "    assert: [{type: llm-rubric, value: ok}]\n")
    down = chorus_eval(config, "--server", "http://127.0.0.1:9/v1", "-o", tmp_path / "r.json")
    assert down.returncode == 2 and "cannot reach http://127.0.0.1:9/v1" in down.stderr, down.stderr
    no_judge = chorus_eval(config, "--model", model_path, "--judge", tmp_path / "judge.gguf", "-o", tmp_path / "r.json")
    assert no_judge.returncode == 2 and f"model file not found: {tmp_path / 'judge.gguf'}" in no_judge.stderr
    assert not (tmp_path / "r.json").exists() and "Traceback" not in down.stderr + no_judge.stderr


@pytest.mark.slow
def test_llm_rubric_and_select_best_judged_by_the_local_model(model_path, tmp_path):
    config = write_config(tmp_path, (
        "prompts: ['Name one colour of the sky, in one word']\n"
        "providers:\n"
        f"  - id: file://{model_path}\n    label: a\n    config: {{temperature: 0, max_tokens: 8}}\n"
        f"  - id: file://{model_path}\n    label: b\n    config: {{temperature: 0.8, seed: 3, max_tokens: 8}}\n"
        "tests:\n"
        "  - assert:\n"
        "      - type: llm-rubric\n        value: The output names a colour\n"
        "      - type: select-best\n        value: the most accurate colour of a clear day sky\n"))
    run = chorus_eval(config, "-o", tmp_path / "results.json", "-o", tmp_path / "report.html", "--judge", "local")
    assert run.returncode in (0, 100), run.stdout + run.stderr
    cells = results(tmp_path / "results.json")
    assert len(cells) == 2 and all(c["error"] is None for c in cells)
    for cell in cells:
        rubric, best = cell["gradingResult"]["componentResults"]
        assert rubric["assertion"]["type"] == "llm-rubric" and rubric["reason"].strip()
        assert not rubric["reason"].startswith("Could not")  # the constrained JSON verdict parsed
        exchange = rubric["judge"][0]
        assert "<Rubric>" in exchange["asked"] and json.loads(exchange["reply"])["reason"] == rubric["reason"]
        assert best["assertion"]["type"] == "select-best" and best["judge"][0]["asked"]
    assert sorted(c["gradingResult"]["componentResults"][1]["pass"] for c in cells) == [False, True]
    assert "<table" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_ctrl_c_cancels_writes_what_finished_and_exits_130(model_path, tmp_path):
    config = write_config(tmp_path, (
        "prompts: ['Count from 1 to 5000, separated by commas: {{n}}']\n"
        "providers:\n"
        "  - echo\n"
        f"  - id: file://{model_path}\n    label: long\n    config: {{temperature: 0, max_tokens: 4000}}\n"
        "tests:\n  - vars: {n: 1}\n  - vars: {n: 2}\n"
        "defaultTest: {assert: [{type: contains, value: Count}]}\n"))
    out = tmp_path / "results.json"
    with subprocess.Popen([sys.executable, "-m", "app", "eval", str(config), "-o", str(out)], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        started = proc.stderr.readline()  # printed once every cell is submitted (echo cells are final by then)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
        stdout, stderr = proc.stdout.read(), proc.stderr.read()
    assert "4 cells started" in started and code == 130, started + stderr
    assert "Traceback" not in stderr
    cells = results(out)
    assert [(c["provider"]["id"], c["success"]) for c in cells] == [("echo", True), ("echo", True)]
    assert "2 passed, 0 failed, 0 errors, 2 not run" in stdout


def test_context_sets_what_each_local_slot_holds(model_path, tmp_path):
    """A prompt longer than a slot ends its cell with the context error; `--context` makes the slots hold it."""
    config = write_config(tmp_path, (
        "prompts: ['{{text}} Say yes.']\n"
        "providers:\n  - id: openai:chat:gpt-4o-mini\n    config: {max_tokens: 2}\n"
        "tests:\n  - vars: {text: '" + "apple " * 300 + "'}\n    assert: [{type: not-contains, value: zzz}]\n"))
    small = chorus_eval(config, "--model", model_path, "--context", "256", "-o", tmp_path / "small.json")
    (cell,) = results(tmp_path / "small.json")
    assert not cell["success"] and "256" in cell["error"], small.stdout + small.stderr
    roomy = chorus_eval(config, "--model", model_path, "--context", "1024", "-o", tmp_path / "roomy.json")
    assert roomy.returncode == 0, roomy.stdout + roomy.stderr
    assert results(tmp_path / "roomy.json")[0]["success"]
    bad = chorus_eval(config, "--model", model_path, "--context", "10")
    assert bad.returncode == 2 and "--context must be in [64, 131072], got 10" in bad.stderr
