"""`python -m app eval` on configs that run the user's code: javascript / python assertions and transforms.
The `echo` provider gives fixed outputs, so no model is needed: what is tested is the code's verdicts, the
consent (`--allow-code`) and the failure modes (a check that loops, allocates without end, or raises)."""

from __future__ import annotations

import json

from tests.cli.test_eval_cli import chorus_eval, results, write_config

CHECKS = """\
module.exports = (output, context) => output.includes(context.vars.word);
module.exports.score = (output) => ({pass: true, score: 0.25, reason: 'quarter'});
"""
PY = """\
def get_assert(output, context):
    return len(output) > 3

def shout(output, context):
    return output.upper()

def broken(output, context):
    x = 1
    return x / 0
"""


def code_config(tmp_path, extra_tests: str = "") -> object:
    (tmp_path / "checks.js").write_text(CHECKS, encoding="utf-8")
    (tmp_path / "checks.py").write_text(PY, encoding="utf-8")
    return write_config(tmp_path, (
        "prompts: ['say {{word}}']\n"
        "providers: [echo]\n"
        "defaultTest:\n"
        "  options: {transformVars: '({...vars, word: (vars.word || \"x\").toLowerCase()})'}\n"
        "tests:\n"
        "  - vars: {word: APPLE}\n"
        "    assert:\n"
        "      - {type: javascript, value: \"output === 'say apple'\"}\n"
        "      - {type: not-javascript, value: 'output.length > 100'}\n"
        "      - {type: javascript, value: 'file://checks.js'}\n"
        "      - {type: javascript, value: 'file://checks.js:score', weight: 0}\n"
        "      - {type: python, value: 'file://checks.py'}\n"
        "      - {type: python, value: \"context['vars']['word'] in output\"}\n"
        "      - {type: equals, value: SAY APPLE, transform: 'file://checks.py:shout'}\n"
        "  - vars: {word: two}\n"
        "    assert: [{type: javascript, value: 'output.n === 2', transform: 'JSON.parse(output)'}]\n"
        "    options: {transform: '`{\"n\": ${output.split(\" \").length}}`'}\n"
        f"{extra_tests}"))


def test_code_needs_allow_code_and_is_named_before_anything_runs(tmp_path):
    config = code_config(tmp_path)
    out = tmp_path / "results.json"
    run = chorus_eval(config, "-o", out)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--allow-code" in run.stderr and "Traceback" not in run.stderr
    for named in (str(tmp_path / "checks.js"), str(tmp_path / "checks.py"), "(function shout)",
                  "javascript assertion (inline): output === 'say apple'", "transformVars (inline)",
                  "test transform (inline)", "not-javascript assertion (inline)"):
        assert named in run.stderr, (named, run.stderr)
    assert not out.exists() and "cells started" not in run.stderr


def test_code_checks_give_promptfoos_verdicts(tmp_path):
    out = tmp_path / "results.json"
    run = chorus_eval(code_config(tmp_path), "-o", out, "--allow-code")
    cell, transformed = results(out)
    assert run.returncode == 0, (run.stdout + run.stderr, json.dumps(cell["gradingResult"], indent=1))
    components = cell["gradingResult"]["componentResults"]
    assert [c["pass"] for c in components] == [True] * 7 and transformed["success"]
    assert components[3]["score"] == 0.25 and components[3]["reason"] == "quarter"


def test_a_check_that_loops_allocates_or_raises_ends_that_cell_and_the_run_goes_on(tmp_path):
    (tmp_path / "bad.py").write_text("def get_assert(output, context):\n    while True:\n        pass\n",
                                     encoding="utf-8")
    extra = (
        "  - description: js loops\n"
        "    assert: [{type: javascript, value: \"while (true) {}\\nreturn true\\n\"}]\n"
        "  - description: js allocates\n"
        "    assert: [{type: javascript, value: \"const a = []\\nwhile (true) a.push(new Array(1e6).fill(1))\\n\"}]\n"
        "  - description: py loops\n"
        "    assert: [{type: python, value: 'file://bad.py'}]\n"
        "  - description: py raises\n"
        "    assert: [{type: python, value: 'file://checks.py:broken'}]\n"
        "  - description: js raises\n"
        "    assert: [{type: javascript, value: \"const x = 1\\nthrow new Error('nope')\\n\"}]\n"
        "  - description: after them\n"
        "    assert: [{type: python, value: 'len(output) > 0'}]\n")
    out = tmp_path / "results.json"
    run = chorus_eval(code_config(tmp_path, extra), "-o", out, "--allow-code",
                      env={**__import__("os").environ, "CHORUS_CODE_TIMEOUT": "2", "COLUMNS": "200"})
    assert run.returncode == 100, run.stdout + run.stderr
    by = {r["testCase"].get("description"): r for r in results(out)}
    for name in ("js loops", "py loops"):
        assert by[name]["failureReason"] == 2 and "time limit (2 s)" in by[name]["error"], by[name]
    # its memory limit, or its time limit where allocating 256 MB takes longer than that on a busy machine
    assert by["js allocates"]["failureReason"] == 2 and "JavaScript ran past its" in by["js allocates"]["error"]
    raised = by["py raises"]["gradingResult"]
    assert not raised["pass"] and f"at {tmp_path / 'checks.py'}:9\n" in raised["reason"]
    assert raised["reason"].startswith("Error running Python script: ZeroDivisionError: division by zero")
    assert "Custom function threw error: nope" in by["js raises"]["gradingResult"]["reason"]
    assert by["after them"]["success"] is True


PROVIDER_PY = """\
def call_api(prompt, options, context):
    return {"output": f"{options['config']['tone']} {prompt} ({context['vars']['word']})"}
"""
PROVIDER_JS = """\
class Shouter {
  constructor(options) { this.config = options.config; }
  id() { return 'shouter'; }
  async callApi(prompt, context) { return {output: prompt.toUpperCase() + this.config.end}; }
}
module.exports = Shouter;
"""
PROVIDER_SH = "#!/bin/sh\nprintf 'exec says: %s' \"$1\"\n"


def test_custom_providers_run_their_code_and_are_scored_like_any_cell(tmp_path):
    (tmp_path / "provider.py").write_text(PROVIDER_PY, encoding="utf-8")
    (tmp_path / "provider.js").write_text(PROVIDER_JS, encoding="utf-8")
    (tmp_path / "say.sh").write_text(PROVIDER_SH, encoding="utf-8")
    (tmp_path / "say.sh").chmod(0o755)
    config = write_config(tmp_path, (
        "prompts: ['say {{word}}']\n"
        "providers:\n"
        "  - {id: 'file://provider.py', label: py, config: {tone: calm}}\n"
        "  - {id: 'file://provider.js', label: js, config: {end: '!'}}\n"
        "  - {id: 'exec: ./say.sh', label: sh}\n"
        "tests:\n"
        "  - vars: {word: apple}\n"
        "    assert: [{type: icontains, value: say apple}]\n"))
    refused = chorus_eval(config)
    assert refused.returncode == 2 and "provider py: the file" in refused.stderr and "./say.sh" in refused.stderr
    out = tmp_path / "results.json"
    run = chorus_eval(config, "-o", out, "--allow-code")
    assert run.returncode == 0, run.stdout + run.stderr
    outputs = {row["provider"]["label"]: row["response"]["output"] for row in results(out)}
    assert outputs == {"py": "calm say apple (apple)", "js": "SAY APPLE!", "sh": "exec says: say apple"}


def test_any_provider_id_runs_on_the_model_given_keeping_its_label_and_settings(model_path, tmp_path):
    config = write_config(tmp_path, (
        "prompts: ['Say hi']\n"
        "providers:\n"
        "  - {id: 'anthropic:messages:claude-3-5-sonnet', label: claude, config: {temperature: 0, max_tokens: 3,"
        " region: x}}\n"
        "  - {id: 'bedrock:us.amazon.nova-lite-v1:0', config: {maxTokens: 2, topP: 0.9}}\n"
        "  - {id: 'https://example.com/api', label: web, config: {max_new_tokens: 1}}\n"
        "tests:\n"
        "  - assert: [{type: javascript, value: 'output.length >= 0'}]\n"))
    refused = chorus_eval(config)
    assert refused.returncode == 2 and refused.stderr.count("--model PATH.gguf") >= 3, refused.stderr
    out = tmp_path / "results.json"
    run = chorus_eval(config, "-o", out, "--model", model_path, "--allow-code")
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {row["provider"]["label"]: row for row in results(out)}
    assert set(rows) == {"claude", "bedrock:us.amazon.nova-lite-v1:0", "web"}
    tokens = {label: row["response"]["tokenUsage"]["completion"] for label, row in rows.items()}
    assert tokens == {"claude": 3, "bedrock:us.amazon.nova-lite-v1:0": 2, "web": 1}, tokens


def test_file_values_of_other_assertions_are_read_as_promptfoo_reads_them(tmp_path):
    (tmp_path / "expected.txt").write_text("say apple\n", encoding="utf-8")
    (tmp_path / "schema.yaml").write_text("type: object\nrequired: [n]\n", encoding="utf-8")
    (tmp_path / "want.py").write_text("def get_assert(output, context):\n    return 'say ' + context['vars']['word']\n",
                                      encoding="utf-8")
    (tmp_path / "bad.js").write_text("module.exports = () => true;\n", encoding="utf-8")
    config = write_config(tmp_path, (
        "prompts: ['say {{word}}']\n"
        "providers: [echo]\n"
        "tests:\n"
        "  - vars: {word: apple}\n"
        "    assert:\n"
        "      - {type: equals, value: 'file://expected.txt'}\n"
        "      - {type: equals, value: 'file://want.py'}\n"
        "      - {type: not-is-json, value: 'file://schema.yaml'}\n"
        "  - vars: {word: pear}\n"
        "    assert: [{type: contains, value: 'file://bad.js'}]\n"))
    refused = chorus_eval(config)
    assert refused.returncode == 2 and "equals assertion's value: the file" in refused.stderr, refused.stderr
    out = tmp_path / "results.json"
    run = chorus_eval(config, "-o", out, "--allow-code")
    assert run.returncode == 100, run.stderr
    good, bad = results(out)
    assert good["success"], good["gradingResult"]
    assert bad["failureReason"] == 2 and "returned a boolean" in bad["error"], bad
