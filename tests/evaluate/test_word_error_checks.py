"""`levenshtein` as promptfoo runs it (fastest-levenshtein counts JavaScript's UTF-16 code units) and Chorus's own
`word-error-rate` assertion (app/session/word_errors.py), in configs, CSV cells and graded cells."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.evaluate.assertion_strings import assertion_from_string
from app.evaluate.checks import CheckError, Output, run_check
from app.evaluate.config import read_config
from app.evaluate.panes import cell_pane
from app.evaluate.scoring import grade
from app.session.evaluation import Assertion, EvalCase

ROOT = Path(__file__).resolve().parents[2]


def check(kind, value, text, **kwargs):
    return run_check(Assertion(type=kind, value=value, **kwargs), value, Output(text=text))


@pytest.mark.parametrize("value, text, threshold, passed, distance", [
    ("", "😀", 1, False, 2),  # one emoji is two UTF-16 code units in JavaScript: distance 2
    ("", "😀😀😀", None, False, 6),  # 6 > the default 5 (three code points would pass)
    ("a😃", "a😀", 1, True, 1),  # the two emoji share their high surrogate: one unit differs
    ("café", "cafe", 1, True, 1),  # é is one unit
    ("hello", "hallo", None, True, 1),
])
def test_levenshtein_counts_utf16_code_units_as_promptfoo(value, text, threshold, passed, distance):
    result = check("levenshtein", value, text, threshold=threshold)
    assert result.passed is passed
    if not passed:
        assert result.reason == f"Levenshtein distance {distance} is greater than threshold {threshold or 5}"


def test_levenshtein_from_a_var_and_a_csv_cell():
    """The value rendered with the case's vars; a CSV cell's `levenshtein:` gets promptfoo's 0.75 (exact only)."""
    test = case({"type": "levenshtein", "value": "{{reference}}", "threshold": 2}, vars={"reference": "the cat"})
    assert graded(test, "the hat").passed and not graded(test, "a hat").passed
    csv = case(assertion_from_string("levenshtein:the cat"))
    assert csv.assertions[0].threshold == 0.75
    assert graded(csv, "the cat").passed and not graded(csv, "the hat").passed


def case(*assertions, vars=None):
    return EvalCase.model_validate({"assert": list(assertions), "vars": vars or {}})


def graded(test, text):
    return grade(test, Output(text=text), prompt="p")


REFERENCE = "The quick brown fox jumps over the lazy dog."


def test_word_error_rate_passes_within_its_threshold_with_the_rate_as_reason():
    test = case({"type": "word-error-rate", "value": "{{reference}}", "threshold": 0.25},
                vars={"reference": REFERENCE})
    close = graded(test, "the quick brown fox jumped over the lazy dog")  # 1 of 9 words: 11.1 %
    assert close.passed
    assert close.component_results[0].score == pytest.approx(1 - 1 / 9)
    assert "Word error rate 11.1 % (1 error in 9 words: 1 substituted)" in close.component_results[0].reason
    far = graded(test, "a quick fox jumps over a dog")  # 2 substituted, 2 deleted: 4 of 9
    assert not far.passed
    assert far.reason == ("Word error rate 44.4 % (4 errors in 9 words: 2 substituted, 2 deleted) is greater than "
                          "threshold 25.0 %")


def test_word_error_rate_default_threshold_negation_and_csv_cells():
    ten = "one two three four five six seven eight nine ten"
    assert check("word-error-rate", ten, "One two three four five six seven eight nine TEN!").passed  # normalised
    assert check("word-error-rate", ten, "one two three four five six seven eight").passed  # 20 %: the default
    assert not check("word-error-rate", ten, "one two three four five six seven").passed  # 30 % > 20 %
    assert check("word-error-rate", "a b", "a b", threshold=0).passed  # 0 means exact (not promptfoo's `|| 5`)
    assert not check("word-error-rate", "a b", "a c", threshold=0).passed
    negated = check("not-word-error-rate", "a b", "x y", threshold=0.5)  # 100 % is not within 50 %: passes
    assert negated.passed and negated.score == 1.0
    assert not check("not-word-error-rate", "a b", "a b").passed
    cell = assertion_from_string("word-error-rate(0.3):the cat sat")
    assert cell == {"type": "word-error-rate", "value": "the cat sat", "threshold": 0.3}
    assert assertion_from_string("not-word-error-rate:the cat") == {"type": "not-word-error-rate",
                                                                      "value": "the cat"}  # its own default


def test_word_error_rate_with_an_empty_reference():
    """No division by zero: an empty reference passes an empty output (rate 0) and fails any words."""
    assert check("word-error-rate", "", "").passed
    failed = check("word-error-rate", "  ...  ", "hello there")  # punctuation only: no words either
    assert not failed.passed and failed.score == 0.0
    assert failed.reason == "Word error rate – (no rate: the reference has no words, the reply has 2 words)"
    with pytest.raises(CheckError):
        check("word-error-rate", None, "text")  # no value at all: the cell is an ERROR


def test_a_config_with_word_error_rate_is_read_and_noted_as_chorus_only(tmp_path):
    config = {"prompts": ["Transcribe {{clip}}"], "providers": ["echo"],
              "tests": [{"vars": {"clip": "a.wav", "reference": "hello world"},
                         "assert": [{"type": "word-error-rate", "value": "{{reference}}", "threshold": 0.1},
                                    {"type": "levenshtein", "value": "{{reference}}"}]}]}
    suite = read_config(config, tmp_path)
    assert [a.type for a in suite.cases[0].assertions] == ["word-error-rate", "levenshtein"]
    assert suite.notes == ["word-error-rate is Chorus's own assertion: promptfoo does not know it"]
    assert read_config({**config, "tests": [{"assert": [{"type": "levenshtein", "value": "x"}]}]},
                       tmp_path).notes == []


def test_a_cell_opened_as_a_pane_takes_its_reference_text(tmp_path):
    config = {"prompts": ["Transcribe {{clip}}"], "providers": ["echo"],
              "tests": [{"vars": {"clip": "a.wav", "transcript": "hello world"},
                         "assert": [{"type": "levenshtein", "value": "hello"},
                                    {"type": "assert-set", "assert": [
                                        {"type": "word-error-rate", "value": "{{transcript}}"}]}]},
                        {"vars": {"clip": "b.wav"}, "assert": [{"type": "levenshtein", "value": "{{clip}} text"}]},
                        {"vars": {"clip": "c.wav"}, "assert": [{"type": "contains", "value": "x"}]}]}
    evaluation = read_config(config, tmp_path).evaluation()
    assert [cell_pane(evaluation, evaluation.cell(c, 0), "local").reference for c in range(3)] == [
        "hello world", "b.wav text", ""]


def test_eval_runs_word_error_rate_and_levenshtein_end_to_end(tmp_path):
    """`python -m app eval` on echo (the output is the prompt): the verdicts, their reasons in results.json, and
    the warning that the config is Chorus's, not promptfoo's."""
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(
        "prompts: ['{{said}}']\n"
        "providers: [echo]\n"
        "defaultTest:\n"
        "  assert:\n"
        "    - {type: word-error-rate, value: '{{transcript}}', threshold: 0.2}\n"
        "    - {type: levenshtein, value: '{{transcript}}', threshold: 3}\n"
        "tests:\n"
        "  - vars: {said: 'The cat sat on the mat.', transcript: 'the cat sat on the mat'}\n"
        "  - vars: {said: 'A cat sat on a hat', transcript: 'the cat sat on the mat'}\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "app", "eval", str(config), "-o", str(tmp_path / "r.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 100, run.stdout + run.stderr
    assert "warning: word-error-rate is Chorus's own assertion: promptfoo does not know it" in run.stderr
    cells = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["results"]["results"]
    reasons = [[c["reason"] for c in cell["gradingResult"]["componentResults"]] for cell in cells]
    assert [cell["success"] for cell in cells] == [True, False]
    assert reasons[0][0] == "Assertion passed: Word error rate 0.0 % (0 errors in 6 words)"
    assert reasons[0][1] == "Assertion passed"  # "The cat sat on the mat." is 2 edits from the transcript
    assert reasons[1] == ["Word error rate 50.0 % (3 errors in 6 words: 3 substituted) is greater than threshold "
                          "20.0 %", "Levenshtein distance 7 is greater than threshold 3"]
