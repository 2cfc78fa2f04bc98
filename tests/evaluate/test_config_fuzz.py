"""promptfoo configs and test files under fuzzing: every field of a plausible config (and of a tests CSV or JSONL)
set to every wrong type, lone surrogates included. Each either loads, runs (its variants on echo, so no model)
and writes every output format as valid UTF-8, or is refused with a ConfigError naming the field — never another
exception. Each test counts the examples it ran and checks the count, so a strategy that silently generates
nothing fails.

Hypothesis runs derandomized in CI (tests/conftest.py's "ci" profile).
"""

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.evaluate import ConfigError, load_config, read_config, write_outputs
from app.evaluate.runner import EvaluationRunner
from app.session import SessionRunner

WRONG = [None, "", "text", 0, 5, -3, 2.5, 1e309, float("nan"), [], [1, "x"], ["a", "b"], {}, {"a": 1}, True,
         False, "\udcff", "x\udcffy", ["\udcff"], {"\udcff": 1}, {"k": "\udcff"}, "{{ broken", "x" * 3000,
         "http://[::1", "a\x00b"]
WRONG_VALUES = st.sampled_from(WRONG)
JUDGE = {"id": "openai:chat:judge", "config": {"apiKey": "x", "apiBaseUrl": "http://127.0.0.1:9/v1"}}
CONFIG = {
    "description": "fuzz",
    "prompts": ["Say {{word}}", {"raw": "Shout {{word}} {{n}}", "label": "shout"}],
    "providers": [
        {"id": "echo", "label": "e", "config": {}},
        {"id": "openai:chat:m", "label": "o", "prompts": ["shout"],
         "config": {"apiBaseUrl": "http://127.0.0.1:9/v1", "apiKey": "x", "apiKeyEnvar": "NO_SUCH_KEY",
                    "temperature": 0, "top_p": 1, "seed": 1, "max_tokens": 8, "stop": ["\n"],
                    "presence_penalty": 0, "frequency_penalty": 0, "response_format": {"type": "json_object"}}}],
    "defaultTest": {"vars": {"n": 1}, "assert": [{"type": "contains", "value": "S"}], "threshold": 0.5,
                    "metadata": {"k": "v"}, "options": {"provider": JUDGE}},
    "tests": [{"description": "t", "vars": {"word": "hi", "many": ["a", "b"]}, "threshold": 0.5,
               "metadata": {"m": 1}, "options": {"prefix": "p ", "suffix": " s", "disableVarExpansion": False},
               "assert": [{"type": "icontains", "value": "hi", "weight": 2, "metric": "m"},
                          {"type": "not-regex", "value": "^z"}, {"type": "levenshtein", "value": "x", "threshold": 9},
                          {"type": "contains-any", "value": ["S", "s"]},
                          {"type": "is-json", "value": {"type": "object"}},
                          {"type": "assert-set", "threshold": 0.5,
                           "assert": [{"type": "equals", "value": "x"}]}]},
              {"vars": {"word": "yo"}, "providerOutput": "canned"}],
    "outputPath": "out.json",
    "evaluateOptions": {"maxConcurrency": 2, "repeat": 1},
    "sharing": False, "tags": {"a": "b"}, "metadata": {"m": 1},
}
FORMATS = ("json", "jsonl", "yaml", "csv", "html", "xml")
COUNTS: dict[str, int] = {}


def paths_in(data, prefix=()):
    """Every place in a JSON-like value (dict keys and list indexes), the containers themselves included."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else []
    for key, value in items:
        yield (*prefix, key)
        yield from paths_in(value, (*prefix, key))


@st.composite
def damaged(draw, base):
    """`base` with one value, anywhere in it, replaced by a value of the wrong type; returns (data, path)."""
    data = copy.deepcopy(base)
    path = draw(st.sampled_from(list(paths_in(data))))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = draw(WRONG_VALUES)
    return data, path


def names_the_field(message: str, path) -> bool:
    """A refusal names the field: one of the keys on the damaged value's path (or its index), as written."""
    keys = [str(k).rstrip("s") for k in path if isinstance(k, str)] + [f"[{k}]" for k in path if isinstance(k, int)]
    return any(key in message for key in keys)


def run_and_write(suite, out: Path) -> None:
    """Run every variant on echo (no model: cells finish as the run starts) and write every output format."""
    suite.variants = [v.model_copy(update={"target": v.target.model_copy(update={"kind": "echo"})})
                      for v in suite.variants]
    evaluation = suite.evaluation()
    runner = EvaluationRunner(evaluation, SessionRunner(None), lambda target: "echo", out)
    runner.start()
    assert runner.done and not evaluation.unfinished()
    paths = [out / f"results.{ext}" for ext in FORMATS]
    write_outputs(evaluation, paths)
    for path in paths:
        path.read_text(encoding="utf-8")  # valid UTF-8, whatever the config held
    document = json.loads(paths[0].read_text(encoding="utf-8"))
    assert len(document["results"]["results"]) == len(evaluation.cells)


def check(load, path, out: Path) -> str:
    try:
        suite = load()
    except ConfigError as exc:
        assert names_the_field(str(exc), path), (path, str(exc))
        return "refused"
    run_and_write(suite, out)
    return "ran"


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_every_field_of_a_config_set_to_every_wrong_type(tmp_path):
    @FUZZ
    @given(damaged(CONFIG))
    def one(case):
        data, path = case
        outcome = check(lambda: read_config(data, tmp_path, "promptfooconfig.yaml"), path, tmp_path)
        COUNTS[f"config {outcome}"] = COUNTS.get(f"config {outcome}", 0) + 1

    run_and_write(read_config(copy.deepcopy(CONFIG), tmp_path, "promptfooconfig.yaml"), tmp_path)  # the base runs
    one()
    ran, refused = COUNTS.get("config ran", 0), COUNTS.get("config refused", 0)
    print(f"config fuzz: {ran + refused} examples, {ran} ran, {refused} refused")
    assert ran + refused >= 300 and ran and refused


CSV_CELLS = st.sampled_from(["", " ", "abc", "0", "-1", "1e999", "nan", "regex:(", "contains-any:", "javascript:1",
                             "similar:x", "not-", "levenshtein(x):y", "contains-json", "is-json:{bad", "llm-rubric:",
                             '"', 'say "hi"', "a,b", "line\nbreak", "\r", "\x00", "=1+1", "{{ broken", "x" * 2000,
                             "\udcff", "é"])
CSV_COLUMNS = ["word", "__expected", "__expected2", "__description", "__prefix", "__suffix", "__providerOutput",
               "__metric", "__threshold", "__metadata:k", "__metadata:tags[]", "__config:__expected:threshold",
               "__config:__expected2:threshold"]


def write_csv(path: Path, rows: list[list[str]]) -> None:
    """CSV rows as promptfoo reads them (quoted as needed); a lone surrogate is written as the bytes Python's
    surrogatepass gives, which are not UTF-8 — as a file from a broken tool would hold."""
    def quoted(cell: str) -> str:
        return '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell
    text = "".join(",".join(quoted(c) for c in row) + "\n" for row in [CSV_COLUMNS, *rows])
    path.write_bytes(text.encode("utf-8", "surrogatepass"))


def test_every_column_of_a_tests_csv_set_to_every_wrong_value(tmp_path):
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(json.dumps({"prompts": ["Say {{word}}"], "providers": ["echo"], "tests": "file://tests.csv"}),
                      encoding="utf-8")

    @FUZZ
    @given(st.lists(st.lists(CSV_CELLS, min_size=len(CSV_COLUMNS), max_size=len(CSV_COLUMNS)), min_size=1,
                    max_size=3))
    def one(rows):
        write_csv(tmp_path / "tests.csv", rows)
        outcome = check(lambda: load_config(config), ["tests.csv"], tmp_path)
        COUNTS[f"csv {outcome}"] = COUNTS.get(f"csv {outcome}", 0) + 1

    one()
    ran, refused = COUNTS.get("csv ran", 0), COUNTS.get("csv refused", 0)
    print(f"tests CSV fuzz: {ran + refused} examples, {ran} ran, {refused} refused")
    assert ran + refused >= 300 and ran and refused


TEST = CONFIG["tests"][0]


def test_every_field_of_a_jsonl_test_set_to_every_wrong_type(tmp_path):
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(json.dumps({"prompts": ["Say {{word}}"], "providers": ["echo"], "tests": "file://tests.jsonl"}),
                      encoding="utf-8")

    @FUZZ
    @given(damaged(TEST), st.sampled_from(["", "[1, 2]", "{not json", '"text"', "[" * 100000]))
    def one(case, extra_line):
        test, path = case
        (tmp_path / "tests.jsonl").write_text(json.dumps(test) + "\n" + extra_line + "\n", encoding="utf-8")
        outcome = check(lambda: load_config(config), ["tests.jsonl", *path], tmp_path)
        COUNTS[f"jsonl {outcome}"] = COUNTS.get(f"jsonl {outcome}", 0) + 1

    one()
    ran, refused = COUNTS.get("jsonl ran", 0), COUNTS.get("jsonl refused", 0)
    print(f"tests JSONL fuzz: {ran + refused} examples, {ran} ran, {refused} refused")
    assert ran + refused >= 300 and ran and refused


@pytest.mark.parametrize("text", ["[" * 100000, "a: &a [*a]", "- !!python/object:os.system x", "\t- x", "{a: 1"])
def test_config_files_yaml_cannot_read_are_refused(tmp_path, text):
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "promptfooconfig.yaml" in str(caught.value)
