"""promptfoo's own example configs as Chorus reads them (`eval --model PATH --allow-code`), and the forms of the
format those examples use that Chorus once refused.

The corpus itself (tests/fixtures/promptfoo_corpus/<example>/) is promptfoo's files, built on this machine by
`scripts/promptfoo_corpus.py build --examples PROMPTFOO/examples` and not kept in git: the tests that read it are
marked `corpus`, left out of `make test` and run by `make test-corpus` once it is built (without it they fail,
saying how to build it). Its measured acceptance is the floor below: it may only rise.
"""

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from app.evaluate import load_config
from app.evaluate.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import promptfoo_corpus  # noqa: E402

FLOOR = 50 / 55  # accepted share measured on the 55-example corpus (promptfoo 0.118.17's examples)
CORPUS_PRESENT = any(promptfoo_corpus.CORPUS.glob(f"*/{promptfoo_corpus.CONFIG}"))
corpus = pytest.mark.corpus


def write(folder: Path, data: dict, **files) -> Path:
    for name, text in files.items():
        path = folder / name.replace("__", ".")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    path = folder / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


# --- the corpus -------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def outcomes():
    assert CORPUS_PRESENT, ("the corpus is not built here: scripts/promptfoo_corpus.py build --examples "
                            "PROMPTFOO/examples")
    return promptfoo_corpus.measure()


@corpus
def test_accepted_share_does_not_fall(outcomes):
    accepted = sum(o.accepted for o in outcomes)
    assert accepted / len(outcomes) >= FLOOR - 1e-9, [o.reason for o in outcomes if not o.accepted]


@corpus
def test_every_refusal_is_one_line_naming_what(outcomes):
    for outcome in (o for o in outcomes if not o.accepted):
        assert outcome.problems, outcome.example
        for line in outcome.problems:
            assert "\n" not in line, (outcome.example, line)
            named = re.search(r"'[^']+'|`[^`]+`|\"[^\"]+\"", line) or re.match(r"[\w.\[\] ]+: ", line)
            assert named, (outcome.example, line)  # quotes what it refuses, or says where it is


@corpus
def test_accepted_configs_plan_as_many_cells_as_promptfoo_runs(outcomes):
    """promptfoo 0.123.1's result cells for each config accepted when they were recorded (`promptfoo_corpus.py
    record`: its providers as echo, no inline assertions): Chorus plans as many prompt x provider x test cells."""
    recorded = json.loads(promptfoo_corpus.CELLS_FILE.read_text(encoding="utf-8"))
    compared = {o.example: (o.cells, recorded[o.example]) for o in outcomes if o.accepted and o.example in recorded}
    assert len(compared) >= 49
    assert {name: pair for name, pair in compared.items() if pair[0] != pair[1]} == {}


# --- forms promptfoo's examples use -----------------------------------------------------------------------------
def test_targets_is_providers(tmp_path):
    """http-provider-auth-signature: `targets:` is promptfoo's other name for `providers:`."""
    suite = load_config(write(tmp_path, {"prompts": ["Hi {{x}}"], "targets": [{"id": "echo", "label": "E"}],
                                         "tests": [{"vars": {"x": "1"}}]}))
    assert [v.label for v in suite.variants] == ["E"]


def test_provider_config_with_every_setting_commented_out(tmp_path):
    """replicate-quickstart: `config:` whose settings are all comments is null in YAML: no settings."""
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text("prompts: ['Hi']\nproviders:\n  - id: echo\n    config:\n      # apiKey: r8_x\n", encoding="utf-8")
    assert [v.provider_id for v in load_config(path).variants] == ["echo"]


def test_default_test_from_a_file(tmp_path):
    """external-defaulttest: `defaultTest: file://shared/defaults.yaml` is that file's mapping."""
    suite = load_config(write(tmp_path, {
        "prompts": ["Q {{q}}"], "providers": ["echo"], "defaultTest": "file://shared/defaults.yaml",
        "tests": [{"vars": {"q": "a"}, "assert": [{"type": "contains", "value": "Q"}]}]},
        **{"shared/defaults__yaml": "vars:\n  tone: calm\nassert:\n  - type: not-equals\n    value: ''\n"}))
    case, = suite.cases
    assert case.vars == {"tone": "calm", "q": "a"}
    assert [a.type for a in case.assertions] == ["not-equals", "contains"]


def test_default_test_file_missing_or_not_a_mapping(tmp_path):
    for value, files, expected in (("file://none.yaml", {}, "none.yaml"),
                                   ("file://list.yaml", {"list__yaml": "- a\n"}, "must hold a mapping"),
                                   ("defaults", {}, "a defaultTest is a mapping or a file://path")):
        with pytest.raises(ConfigError) as caught:
            load_config(write(tmp_path, {"prompts": ["Q"], "providers": ["echo"], "defaultTest": value}, **files))
        assert any(expected in line for line in caught.value.problems), caught.value.problems


def test_grading_option_promptfoo_ignores(tmp_path):
    """google-vertex-tools: `options.providers` is no promptfoo option (its schema lets it through, nothing reads
    it): read, ignored, and said so once."""
    suite = load_config(write(tmp_path, {
        "prompts": ["Q"], "providers": ["echo"],
        "defaultTest": {"options": {"providers": {"text": "google:gemini-2.0-flash-001"}}}}))
    assert len(suite.cases) == 1
    assert any("options.providers" in note and "ignore" in note for note in suite.notes)


def test_a_judge_of_any_provider_runs_on_the_evaluations_judge_when_every_provider_runs_on_one_model(tmp_path):
    """google-vertex, replicate-llama-guard-moderation: a judge named by a provider id Chorus cannot reach
    (`vertex:chat:gemini-pro`) is read under `eval --model` / the window's offer, as every provider is, and runs on
    the evaluation's judge; as written (no --model) it is one line naming it."""
    from app.evaluate.routes import default_judge, needed_targets

    data = {"prompts": ["Say {{x}}"], "providers": ["anthropic:messages:claude-3-5-haiku"],
            "defaultTest": {"options": {"provider": "vertex:chat:gemini-pro"}},
            "tests": [{"vars": {"x": "hi"}, "assert": [
                {"type": "llm-rubric", "value": "greets"},
                {"type": "llm-rubric", "value": "short",
                 "provider": {"id": "bedrock:claude", "config": {"temperature": 0}}}]}]}
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    judges = [line for line in caught.value.problems if line.split(":")[0].endswith(".provider")]
    assert len(judges) == 2 and all("\n" not in line for line in judges), caught.value.problems
    suite = load_config(path, any_provider=True)
    targets = needed_targets(suite.evaluation(judge="local"), suite.base_dir)
    assert default_judge("local") in targets
    assert all(t.model not in ("vertex:chat:gemini-pro", "bedrock:claude") for t in targets)


def test_a_bare_javascript_path_is_a_custom_provider(tmp_path):
    """custom-provider-embeddings: promptfoo takes a provider id ending .js (no file://) as a custom provider
    (isJavascriptFile). As a variant it runs its code, never the local model; as `similar`'s embedder its
    callEmbeddingApi embeds (code: named for consent); as a judge it is refused by name (it was read as a remote id
    and, under --model, silently replaced by the local model)."""
    code = "module.exports = class { id() { return 'p'; } async callApi(p) { return {output: p}; } };\n"
    suite = load_config(write(tmp_path, {"prompts": ["Q"], "providers": ["./provider.js"]}, provider__js=code),
                        any_provider=True)
    assert [v.target.kind for v in suite.variants] == ["code"]
    suite = load_config(write(tmp_path, {"prompts": ["Q"], "providers": ["echo"], "tests": [{"assert": [
        {"type": "similar", "value": "Q", "provider": "./provider.js"}]}]}, provider__js=code), any_provider=True)
    assert any("embedder" in line and "provider.js" in line for line in suite.code), suite.code
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, {"prompts": ["Q"], "providers": ["echo"], "tests": [{"assert": [
            {"type": "llm-rubric", "value": "Q", "provider": "./provider.js"}]}]}, provider__js=code),
            any_provider=True)
    assert caught.value.problems == ["tests[0].assert[0].provider: a custom provider ('./provider.js') as a judge "
                                     "is not supported by Chorus"]


TOOL_JSON = ('{"type": "function", "function": {"name": "%s", "description": "d", "parameters": '
             '{"type": "object", "properties": {}}}}')


def test_tools_as_file_references_with_callbacks_and_a_simulated_user_test_provider(tmp_path):
    """tau-simulated-user: `tools` a list of file:// tool files, `functionToolCallbacks`, and defaultTest's
    `provider: promptfoo:simulated-user` (a test's own wins)."""
    config = write(tmp_path, {
        "prompts": ["Agent"],
        "providers": [{"id": "openai:gpt-4.1-mini", "config": {
            "tools": ["file://functions/a.json", "file://functions/b.yaml"], "tool_choice": "auto",
            "functionToolCallbacks": {"a": "file://cb.js:a", "b": "(args) => args"}}}],
        "defaultTest": {"provider": {"id": "promptfoo:simulated-user", "config": {"maxTurns": 3}}},
        "tests": [{"vars": {"instructions": "x"}}, {"provider": "promptfoo:simulated-user"}]},
        **{"functions/a.json": TOOL_JSON % "a", "functions/b.yaml": "type: function\nfunction: {name: b}\n"},
        cb__js="module.exports = {a: (args) => args};\n")
    suite = load_config(config, any_provider=True)
    (variant,) = suite.variants
    assert [t["function"]["name"] for t in variant.tools] == ["a", "b"]
    assert variant.callbacks == {"a": "file://cb.js:a", "b": "(args) => args"}
    assert [case.provider for case in suite.cases] == [
        {"id": "promptfoo:simulated-user", "config": {"maxTurns": 3}}, {"id": "promptfoo:simulated-user",
                                                                         "config": {}}]
    assert any("tool callback a: the file" in line for line in suite.code)


def test_a_test_provider_chorus_does_not_run_is_refused_by_name(tmp_path):
    config = write(tmp_path, {"prompts": ["Hi"], "providers": [
        {"id": "echo", "config": {"functionToolCallbacks": {"a": "(args) => args"}}},
        {"id": "anthropic:messages:claude", "config": {"functionToolCallbacks": {"a": "(args) => args"}}}], "tests": [
        {"provider": "openai:gpt-4"},
        {"provider": {"id": "promptfoo:simulated-user", "config": {"initialMessages": []}}}]})
    with pytest.raises(ConfigError) as refused:
        load_config(config, any_provider=True)
    problems = refused.value.problems
    assert any("a test's own provider ('openai:gpt-4') is not supported by Chorus" in p for p in problems), problems
    assert any("'initialMessages' is not supported" in p for p in problems), problems
    assert any("'functionToolCallbacks'" in p for p in problems), problems  # echo runs no tools
    assert any("'functionToolCallbacks' on this provider is not supported" in p for p in problems), problems
    assert any("promptfoo:simulated-user with an echo or custom provider" in p for p in problems), problems
