"""`python -m app eval --model` on the embedded model with promptfoo's `functionToolCallbacks` (tools given as a
list of file:// references) and the `promptfoo:simulated-user` test provider: the callbacks are code, named and
refused without --allow-code; with it, a called tool's callback result is the cell's output (promptfoo does not ask
the model again), a callback that throws leaves the model's reply, one that never returns ends its cell an ERROR and
the others run; a simulated user's conversation ends as a transcript in promptfoo's format."""

from __future__ import annotations

import os

from tests.cli.test_eval_cli import chorus_eval, results, write_config

TOOL = ('{"type": "function", "function": {"name": "lookup", "description": "Look up a city", "parameters": '
        '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}')
CALLBACKS_JS = """\
function lookup(args) { return {city: JSON.parse(args).city.length > 0, kind: typeof args}; }
function broken(args) { throw new Error('no'); }
function spin(args) { while (true) {} }
module.exports = { lookup, broken, spin };
"""


def callbacks_config(tmp_path) -> object:
    (tmp_path / "functions").mkdir()
    (tmp_path / "functions" / "lookup.json").write_text(TOOL, encoding="utf-8")
    (tmp_path / "callbacks.js").write_text(CALLBACKS_JS, encoding="utf-8")
    callbacks = {"inline": "\"async (args) => 'looked up ' + typeof args\"", "file": "file://callbacks.js:lookup",
                 "throws": "file://callbacks.js:broken", "spins": "file://callbacks.js:spin"}
    providers = "".join(
        f"  - id: openai:gpt-4.1-mini\n    label: {label}\n    config:\n      temperature: 0\n      max_tokens: 48\n"
        "      tool_choice: required\n      tools: [file://functions/lookup.json]\n"
        f"      functionToolCallbacks: {{lookup: {ref}}}\n" for label, ref in callbacks.items())
    return write_config(tmp_path, "prompts: ['What is the weather in Paris?']\nproviders:\n" + providers +
                        "tests:\n  - vars: {}\n")


def test_tool_callbacks_are_code_named_before_anything_runs(model_path, tmp_path):
    run = chorus_eval(callbacks_config(tmp_path), "--model", model_path, "-o", tmp_path / "out.json")
    assert run.returncode == 2 and "--allow-code" in run.stderr, run.stdout + run.stderr
    assert "provider inline tool callback lookup (inline): async (args) =>" in run.stderr
    assert f"provider spins tool callback lookup: the file {tmp_path / 'callbacks.js'} (function spin)" in run.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_called_tools_callback_result_is_the_output_and_a_stuck_one_ends_only_its_cell(model_path, tmp_path):
    out = tmp_path / "out.json"
    run = chorus_eval(callbacks_config(tmp_path), "--model", model_path, "--allow-code", "-o", out,
                      env={**os.environ, "CHORUS_CODE_TIMEOUT": "1", "COLUMNS": "200"})
    assert run.returncode in (0, 100), run.stdout + run.stderr
    by = {row["provider"]["label"]: row for row in results(out)}
    assert by["inline"]["response"]["output"] == "looked up string"  # args arrive as the JSON string
    assert by["file"]["response"]["output"] == '{"city":true,"kind":"string"}'  # an object: JSON.stringify
    assert by["throws"].get("error") is None and by["throws"]["response"]["output"] == ""  # the reply, kept
    assert by["throws"]["response"]["toolCalls"][0]["name"] == "lookup"
    assert by["spins"]["failureReason"] == 2 and "time limit (1 s)" in by["spins"]["error"], by["spins"]


def test_a_simulated_user_conversation_ends_as_promptfoos_transcript(model_path, tmp_path):
    config = write_config(tmp_path, (
        "prompts: ['You are an airline agent. Answer in one sentence.']\n"
        "providers:\n  - id: openai:gpt-4.1-mini\n    config: {temperature: 0, max_tokens: 16}\n"
        "defaultTest:\n  provider: {id: 'promptfoo:simulated-user', config: {maxTurns: 2}}\n"
        "tests:\n  - vars: {instructions: 'You want to fly from Paris to Rome tomorrow.'}\n"
        "    assert: [{type: icontains, value: 'User: '}]\n"))
    out = tmp_path / "out.json"
    run = chorus_eval(config, "--model", model_path, "-o", out)
    assert run.returncode in (0, 100), run.stdout + run.stderr
    (row,) = results(out)
    turns = row["response"]["output"].split("\n---\n")
    assert len(turns) <= 4 and len(turns) % 2 == 0, turns  # 2 turns: user, assistant, user, assistant
    for i, turn in enumerate(turns):
        assert turn.startswith(("User: ", "Assistant: ")[i % 2]), turns
    assert "###STOP###" not in row["response"]["output"]
