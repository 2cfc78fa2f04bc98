"""`python -m app eval` on configs with Ruby: `ruby` / `not-ruby` assertions and `file://provider.rb` providers, run
by the system's `ruby` in worker processes (app/evaluate/rb_code.py) on the embedded model's outputs. The Ruby is
real: these tests need `ruby` on PATH (README: development). promptfoo's verdicts on fixed outputs are checked in
tests/evaluate/test_code_parity.py."""

from __future__ import annotations

import os

from tests.cli.test_eval_cli import chorus_eval, results, write_config

CHECKS_RB = """\
def get_assert(output, context)
  { 'pass' => output.length > 0, 'score' => 1.0,
    'reason' => "#{output.length} characters about #{context['vars']['topic']}" }
end

def check_length(output, context)
  output.length >= context.fetch('config', {}).fetch('minLength', 20)
end

def broken(output, context)
  words = output.split
  words.fetch(100000)
end

def forever(output, context)
  loop {}
end
"""
PROVIDER_RB = """\
def call_api(prompt, options, context)
  { 'output' => "#{prompt}#{options['config']['suffix']} (#{context['vars']['topic']})",
    'tokenUsage' => { 'total' => 7, 'prompt' => 5, 'completion' => 2 } }
end

def shout(prompt, options, context)
  { 'output' => prompt.upcase }
end
"""
CONFIG = """\
prompts: ['Write one short sentence about {{topic}}.']
providers:
  - {id: 'openai:chat:gpt-4.1-mini', label: model, config: {max_tokens: 8, temperature: 0}}
  - {id: 'file://provider.rb', label: rb, config: {suffix: '!'}}
  - {id: 'file://provider.rb:shout', label: rb-shout}
tests:
  - vars: {topic: bananas}
    assert:
      - {type: ruby, value: 'output.length > 0'}
      - {type: not-ruby, value: 'output.length > 100000'}
      - {type: ruby, value: 'file://checks.rb'}
      - {type: ruby, value: 'file://checks.rb:check_length', config: {minLength: 3}}
      - type: ruby
        value: |
          # the last expression is the result, as in promptfoo's examples
          words = output.split
          { 'pass' => words.length >= 1, 'score' => 1.0, 'reason' => "#{words.length} words" }
"""


def ruby_config(tmp_path, extra: str = "") -> object:
    for name, text in (("checks.rb", CHECKS_RB), ("provider.rb", PROVIDER_RB)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    return write_config(tmp_path, CONFIG + extra)


def test_ruby_needs_allow_code_and_is_named_before_anything_runs(tmp_path):
    run = chorus_eval(ruby_config(tmp_path))
    assert run.returncode == 2 and "--allow-code" in run.stderr and "Traceback" not in run.stderr, run.stderr
    for named in ("ruby assertion (inline): output.length > 0", "not-ruby assertion (inline)",
                  f"ruby assertion: the file {tmp_path / 'checks.rb'} (function check_length)",
                  f"provider rb: the file {tmp_path / 'provider.rb'}\n",
                  f"provider rb-shout: the file {tmp_path / 'provider.rb'} (function shout)"):
        assert named in run.stderr, (named, run.stderr)
    assert "cells started" not in run.stderr


def test_ruby_checks_and_providers_run_on_the_models_outputs(model_path, tmp_path):
    out = tmp_path / "results.json"
    run = chorus_eval(ruby_config(tmp_path), "-o", out, "--model", model_path, "--allow-code")
    rows = {row["provider"]["label"]: row for row in results(out)}
    assert set(rows) == {"model", "rb", "rb-shout"}, run.stderr
    assert rows["rb"]["response"]["output"] == "Write one short sentence about bananas.! (bananas)"
    assert rows["rb-shout"]["response"]["output"] == "WRITE ONE SHORT SENTENCE ABOUT BANANAS."
    usage = rows["rb"]["response"]["tokenUsage"]
    assert (usage["prompt"], usage["completion"]) == (5, 2)  # the provider's own tokenUsage, as promptfoo reads it
    assert rows["model"]["response"]["tokenUsage"]["completion"] <= 8  # the model's own output, not the code's
    for label, row in rows.items():
        output = row["response"]["output"]
        components = row["gradingResult"]["componentResults"]
        verdicts = [(c["pass"], c["score"], c["reason"]) for c in components]
        words = len(output.split())
        assert verdicts == [
            (len(output) > 0, float(len(output) > 0), "Assertion passed" if output else
             "Ruby code returned false\noutput.length > 0"),
            (True, 1.0, "Assertion passed"),
            (len(output) > 0, 1.0, f"{len(output)} characters about bananas"),
            (len(output) >= 3, float(len(output) >= 3), "Assertion passed" if len(output) >= 3 else
             "Ruby code returned false\nfile://checks.rb:check_length"),
            (words >= 1, 1.0, f"{words} words"),
        ], (label, output)


def test_a_ruby_check_that_loops_or_raises_ends_that_cell_and_the_run_goes_on(model_path, tmp_path):
    extra = ("  - description: loops\n"
             "    assert: [{type: ruby, value: 'file://checks.rb:forever'}]\n"
             "  - description: raises\n"
             "    assert: [{type: ruby, value: 'file://checks.rb:broken'}]\n"
             "  - description: inline raises\n"
             "    assert: [{type: ruby, value: \"x = 1\\nraise 'nope'\\n\"}]\n"
             "  - description: after them\n"
             "    assert: [{type: ruby, value: 'output.length >= 0'}]\n")
    out = tmp_path / "results.json"
    run = chorus_eval(ruby_config(tmp_path, extra), "-o", out, "--model", model_path, "--allow-code",
                      env={**os.environ, "CHORUS_CODE_TIMEOUT": "2", "COLUMNS": "200"})
    assert run.returncode == 100, run.stdout + run.stderr
    rows = [r for r in results(out) if r["provider"]["label"] == "model"]
    by = {r["testCase"].get("description"): r for r in rows}
    assert by["loops"]["failureReason"] == 2 and "the Ruby ran past its time limit (2 s)" in by["loops"]["error"]
    raised = by["raises"]["gradingResult"]
    assert not raised["pass"] and f"at {tmp_path / 'checks.rb'}:12\n" in raised["reason"], raised["reason"]
    assert raised["reason"].startswith("Error running Ruby script: IndexError: index 100000 outside of array")
    inline = by["inline raises"]["gradingResult"]["reason"]
    assert inline.startswith("Ruby code execution failed: Error running Ruby script: RuntimeError: nope")
    assert "at the inline check, line 2\n" in inline, inline
    assert by["after them"]["success"] is True


def test_without_ruby_every_ruby_cell_is_one_clear_error_and_the_rest_run(model_path, tmp_path):
    config = ruby_config(tmp_path, "  - description: no code\n    assert: [{type: icontains, value: bananas}]\n")
    bare = tmp_path / "bin"  # a PATH with no `ruby` on it (the Python is run by its full path)
    bare.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PROMPTFOO_RUBY"}
    out = tmp_path / "results.json"
    run = chorus_eval(config, "-o", out, "--model", model_path, "--allow-code",
                      env={**env, "PATH": str(bare), "COLUMNS": "200"})
    assert "Traceback" not in run.stderr, run.stderr
    rows = {(r["provider"]["label"], r["testCase"].get("description")): r for r in results(out)}
    assert len(rows) == 6
    for (label, description), row in rows.items():
        if description == "no code" and label == "model":  # no Ruby needed: it runs
            assert row["failureReason"] in (0, 1) and row["response"]["output"], row
            continue
        assert row["failureReason"] == 2, row
        what = f"provider {label}" if label != "model" else "ruby check"
        assert row["error"] == f"{what} needs Ruby: no `ruby` on PATH (install Ruby, or set PROMPTFOO_RUBY to one)"
