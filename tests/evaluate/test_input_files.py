"""Files people hand an evaluation: not UTF-8, broken var files, a written API key, a lone surrogate in the text,
the judge flag. Each is read or refused with a message naming the file (and line) — never a traceback — and
what an evaluation computed is always written out."""

import argparse
import csv
import io
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from app.cli.eval import prepare, summary
from app.engine.limits import CONTEXT_PER_SLOT
from app.evaluate import graders, load_config, write_outputs
from app.evaluate.checks import Output
from app.evaluate.errors import ConfigError
from app.evaluate.routes import needed_targets
from app.evaluate.runner import EvaluationRunner
from app.evaluate.scoring import grade
from app.session import SessionRunner, evaluation_file


def run_echo(evaluation, base: Path):
    """Run an evaluation of echo variants: their cells finish (and are graded) as it starts, with no model."""
    runner = EvaluationRunner(evaluation, SessionRunner(None), lambda target: "echo", base)
    runner.start()
    assert runner.done and not evaluation.unfinished()
    return evaluation


def write_config(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def refused(path: Path, **kwargs) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path, **kwargs)
    return str(caught.value)


# --- files that are not UTF-8, broken var files ----------------------------------------------------------
def test_a_cp1252_tests_csv_is_refused_naming_the_file_line_and_byte(tmp_path):
    (tmp_path / "tests.csv").write_bytes("city,__expected\nParis,contains:a\nMontr\xe9al,contains:a\n".encode("cp1252"))
    message = refused(write_config(tmp_path, {"prompts": ["Where is {{city}}?"], "providers": ["echo"],
                                              "tests": "file://tests.csv"}))
    assert f"{tmp_path / 'tests.csv'}:3: not UTF-8 (byte 0xe9 at column 6)" in message, message
    assert "save the file as UTF-8" in message


@pytest.mark.parametrize("name", ["tests.jsonl", "tests.yaml"])
def test_other_test_files_that_are_not_utf8_name_file_and_line(tmp_path, name):
    text = '{"vars": {"city": "Paris"}}\n{"vars": {"city": "Montr\xe9al"}}\n'
    if name.endswith(".yaml"):
        text = "- vars: {city: Paris}\n- vars: {city: Montr\xe9al}\n"
    (tmp_path / name).write_bytes(text.encode("cp1252"))
    message = refused(write_config(tmp_path, {"prompts": ["{{city}}"], "providers": ["echo"],
                                              "tests": f"file://{name}"}))
    assert f"{name}:2: not UTF-8 (byte 0xe9" in message, message


def test_a_prompt_file_or_config_that_is_not_utf8_is_a_config_error(tmp_path):
    (tmp_path / "p.txt").write_bytes("Caf\xe9 {{x}}".encode("cp1252"))
    message = refused(write_config(tmp_path, {"prompts": ["file://p.txt"], "providers": ["echo"]}))
    assert "p.txt:1: not UTF-8 (byte 0xe9 at column 4)" in message, message
    config = tmp_path / "cp.yaml"
    config.write_bytes("description: caf\xe9\nprompts: [x]\nproviders: [echo]\n".encode("cp1252"))
    assert "cp.yaml:1: not UTF-8 (byte 0xe9 at column 17)" in refused(config)


def test_a_var_file_with_broken_yaml_names_the_file_and_the_yaml_problem(tmp_path):
    (tmp_path / "vars.yaml").write_text("city: [Paris\nriver: Seine\n", encoding="utf-8")
    (tmp_path / "cp.txt").write_bytes(b"Montr\xe9al")
    message = refused(write_config(tmp_path, {"prompts": ["{{v}}"], "providers": ["echo"],
                                              "tests": [{"vars": {"v": "file://vars.yaml"}},
                                                        {"vars": {"v": "file://cp.txt"}}]}))
    assert "tests[0].vars.v: " in message and "vars.yaml: not valid YAML/JSON" in message, message
    assert "line 2" in message  # the YAML problem, where it is
    assert "cp.txt:1: not UTF-8" in message


# --- a written API key ------------------------------------------------------------------------------------
DUMMY = {"id": "openai:chat:qwen", "config": {"apiKey": "x", "apiBaseUrl": "http://127.0.0.1:8080/v1"}}
REAL_KEY = "sk-proj-4fJ9q2LxT7vB1mN8cR5wZ3yH6kP0dS"


def test_a_written_api_key_is_accepted_used_and_written_nowhere(tmp_path):
    judge = {"id": "openai:chat:judge", "config": {"apiKey": REAL_KEY, "apiBaseUrl": "https://judge.example/v1"}}
    suite = load_config(write_config(tmp_path, {
        "prompts": ["Hi {{x}}"], "providers": [DUMMY],
        "defaultTest": {"options": {"provider": judge}}, "tests": [{"vars": {"x": 1}}]}))
    variant = suite.variants[0]
    assert os.environ[variant.target.api_key_env] == "x"  # the key reaches the server, from memory only
    suite.variants = [v.model_copy(update={"target": v.target.model_copy(update={"kind": "echo"})})
                      for v in suite.variants]
    evaluation = run_echo(suite.evaluation(judge="local"), tmp_path)
    outputs = [tmp_path / f"r.{ext}" for ext in ("json", "jsonl", "yaml", "csv", "html", "xml")]
    write_outputs(evaluation, outputs)
    saved = [evaluation_file.encode(evaluation).decode("utf-8")] + [p.read_text(encoding="utf-8") for p in outputs]
    assert not any(REAL_KEY in text or '"apiKey"' in text or "apiKey:" in text for text in saved)
    judge_config = evaluation.cases[0].options.provider["config"]
    assert os.environ[judge_config["apiKeyEnvar"]] == REAL_KEY and "apiKey" not in judge_config


def test_a_real_looking_key_for_a_remote_server_warns_once(tmp_path):
    remote = {"id": "openai:chat:gpt", "config": {"apiKey": REAL_KEY}}
    suite = load_config(write_config(tmp_path, {"prompts": ["a", "b"], "providers": [remote, remote, DUMMY]}))
    assert len(suite.notes) == 1 and "api.openai.com" in suite.notes[0] and REAL_KEY not in suite.notes[0]
    local = {"id": "openai:chat:m", "config": {"apiKey": REAL_KEY, "apiBaseUrl": "http://localhost:8080/v1"}}
    assert load_config(write_config(tmp_path, {"prompts": ["a"], "providers": [local, DUMMY]})).notes == []
    bad = {"id": "openai:chat:m", "config": {"apiKey": 42}}
    assert "providers[0].config.apiKey: must be a string" in refused(
        write_config(tmp_path, {"prompts": ["a"], "providers": [bad]}))


# --- --judge overrides defaultTest.options.provider --------------------------------------------------------
def eval_args(config: Path, **overrides) -> argparse.Namespace:
    values = {"config": str(config), "output": None, "model": None, "server": None, "server_model": None,
              "judge": None, "repeat": None, "max_concurrency": None, "slots": 2, "no_cache": False,
              "context": CONTEXT_PER_SLOT.default}
    return argparse.Namespace(**{**values, **overrides})


def test_an_explicit_judge_flag_beats_the_configs_default_judge(tmp_path):
    remote = {"id": "openai:chat:grader", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1"}}
    own = {"id": "openai:chat:own", "config": {"apiBaseUrl": "http://127.0.0.1:7/v1"}}
    path = write_config(tmp_path, {
        "prompts": ["Say {{x}}"], "providers": ["echo"], "defaultTest": {"options": {"provider": remote}},
        "tests": [{"vars": {"x": "hi"}, "assert": [{"type": "llm-rubric", "value": "says hi"}]},
                  {"vars": {"x": "yo"}, "options": {"provider": own},
                   "assert": [{"type": "llm-rubric", "value": "says yo"}]}]})
    urls = lambda evaluation: {t.url for t in needed_targets(evaluation, tmp_path) if t.kind == "server"}  # noqa
    assert urls(prepare(eval_args(path))[0]) == {"http://127.0.0.1:9/v1", "http://127.0.0.1:7/v1"}
    evaluation = prepare(eval_args(path, judge="local"))[0]
    assert evaluation.judge == "local"
    assert urls(evaluation) == {"http://127.0.0.1:7/v1"}  # a test's own provider still wins, as in promptfoo
    assert any(t.kind == "local" for t in needed_targets(evaluation, tmp_path))


def judge_requests(evaluation) -> list:
    """The judge requests grading every case of `evaluation` sends (answered with a passing verdict)."""
    sent = []

    def judge(request, _provider):
        sent.append(request)
        return json.dumps({"reason": "ok", "pass": True, "score": 1})
    for case in evaluation.cases:
        grade(case, Output(text="hi"), "p", judge=judge)
    return sent


def test_the_judge_flag_moves_the_judge_and_keeps_the_configs_judge_settings(tmp_path):
    # a judge provider's max_tokens and temperature are the requests' own; --judge changes only where they go
    grader = {"id": "openai:chat:grader", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1", "max_tokens": 96,
                                                      "temperature": 0.25}}
    path = write_config(tmp_path, {
        "prompts": ["Say {{x}}"], "providers": ["echo"], "defaultTest": {"options": {"provider": grader}},
        "tests": [{"vars": {"x": "hi"}, "assert": [{"type": "llm-rubric", "value": "says hi"}]}]})
    for judge in (None, "local"):
        evaluation = prepare(eval_args(path, judge=judge))[0]
        [request] = judge_requests(evaluation)
        assert request.max_tokens == 96 and request.sampling.temperature == 0.25, judge
        assert request.json_schema is not None  # still constrained to the verdict's shape
    servers = {t.url for t in needed_targets(evaluation, tmp_path) if t.kind == "server"}
    assert servers == set() and evaluation.judge == "local"
    # without settings in the config, a judge keeps Chorus's own
    path = write_config(tmp_path, {"prompts": ["Say {{x}}"], "providers": ["echo"],
                                   "tests": [{"vars": {"x": "hi"}, "assert": [{"type": "llm-rubric", "value": "x"}]}]})
    [request] = judge_requests(prepare(eval_args(path, judge="local"))[0])
    assert request.max_tokens == graders.JUDGE_MAX_TOKENS and request.sampling == graders.JUDGE_SAMPLING


def test_a_judge_providers_settings_are_checked_before_anything_runs(tmp_path):
    grader = {"id": "openai:chat:grader", "config": {"max_tokens": "lots"}}
    with pytest.raises(ConfigError, match="max_tokens: must be a number"):
        load_config(write_config(tmp_path, {"prompts": ["a"], "providers": ["echo"],
                                            "defaultTest": {"options": {"provider": grader}}}))


# --- the summary's variant names ---------------------------------------------------------------------
def test_the_summary_names_variants_briefly_and_fits_the_terminal(tmp_path, monkeypatch):
    long_prompt = " ".join(f"word{i}" for i in range(256)) + " {{x}}"
    (tmp_path / "system.txt").write_text("You are terse.\n" * 40, encoding="utf-8")
    suite = load_config(write_config(tmp_path, {
        "prompts": [long_prompt, "file://system.txt", {"raw": long_prompt, "label": "long one"}],
        "providers": [{"id": "echo", "label": "mirror"}], "tests": [{"vars": {"x": 1}}]}))
    monkeypatch.setenv("COLUMNS", "80")
    lines = summary(suite.evaluation()).splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    names = [line.split("  ")[0] for line in lines[2:5]]
    assert names[0].startswith("[mirror] word0 word1") and "word200" not in names[0]
    assert names[1].strip() == "[mirror] system.txt" and names[2].strip() == "[mirror] long one", names


# --- a lone surrogate anywhere in the text ---------------------------------------------------------------
def test_an_evaluation_holding_lone_surrogates_writes_every_output_format(tmp_path):
    config = {"description": "d\udcff", "prompts": [{"raw": "Say {{w}}\udcff", "label": "lab\udcff"}],
              "providers": [{"id": "echo", "label": "e\udcff"}],
              "tests": [{"description": "t\udcff", "vars": {"w": "v\udcff"},
                         "assert": [{"type": "contains", "value": "v\udcff"}]}]}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(config), encoding="utf-8")  # valid JSON: the surrogates are \udcff escapes
    evaluation = run_echo(load_config(path).evaluation(), tmp_path)
    assert evaluation.cells[0].status == "pass"  # the echo is "Say v\udcff\udcff": it contains "v\udcff"
    outputs = [tmp_path / f"r.{ext}" for ext in ("json", "jsonl", "yaml", "csv", "html", "xml")]
    write_outputs(evaluation, outputs)
    document = json.loads(outputs[0].read_text(encoding="utf-8"))
    assert document["results"]["results"][0]["response"]["output"] == "Say v\udcff\udcff"  # nothing lost
    assert json.loads(outputs[1].read_text(encoding="utf-8"))["vars"] == {"w": "v\udcff"}
    assert yaml.safe_load(outputs[2].read_text(encoding="utf-8"))["results"]["results"][0]["vars"]["w"] == "v\udcff"
    rows = list(csv.reader(io.StringIO(outputs[3].read_text(encoding="utf-8"))))
    assert rows[1][0] == "t\ufffd" and "Say v\ufffd\ufffd" in rows[1]
    assert "Say v\ufffd\ufffd" in outputs[4].read_text(encoding="utf-8")
    assert ET.parse(outputs[5]).getroot().find("testsuite").get("name") == "[e\ufffd] lab\ufffd"


def test_xml_output_replaces_characters_xml_cannot_hold(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"prompts": ["bell\u0007 {{x}}"], "providers": ["echo"],
                                "tests": [{"vars": {"x": "\u0001"}}]}), encoding="utf-8")
    write_outputs(run_echo(load_config(path).evaluation(), tmp_path), [tmp_path / "r.xml"])
    assert ET.parse(tmp_path / "r.xml").getroot().find(".//system-out").text == "bell\ufffd \ufffd"
