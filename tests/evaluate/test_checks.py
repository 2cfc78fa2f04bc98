"""Deterministic assertions, case by case against promptfoo's rules (shared/notes/promptfoo-format.md, section 3)."""

import pytest

from app.evaluate.checks import CheckError, Output, json_objects, normalise_finish_reason, run_check
from app.session.evaluation import Assertion


def check(kind, value=None, text="", **kwargs):
    output_fields = {k: kwargs.pop(k) for k in ("latency_ms", "finish_reason", "logprobs") if k in kwargs}
    return run_check(Assertion(type=kind, value=value, **kwargs), value, Output(text=text, **output_fields))


@pytest.mark.parametrize("kind, value, text, passed", [
    ("equals", "Hello", "Hello", True),
    ("equals", "Hello", "hello", False),
    ("equals", "Hello", "Hello ", False),
    ("not-equals", "Hello", "hello", True),
    ("equals", 42, "42", True),  # String(value) === output
    ("equals", 1.0, "1", True),  # JavaScript prints 1.0 as 1
    ("equals", True, "true", True),
    ("equals", {"a": 1, "b": [1, 2]}, '{"b": [1, 2], "a": 1}', True),  # object value: deep-equal the parsed output
    ("equals", {"a": 1}, "not json", False),
    ("contains", "world", "hello world", True),
    ("contains", "World", "hello world", False),
    ("not-contains", "world", "hello world", False),
    ("contains", 42, "answer: 42", True),  # numbers are allowed
    ("icontains", "WORLD", "hello world", True),
    ("not-icontains", "WORLD", "hello world", False),
    ("contains-any", ["x", "world"], "hello world", True),
    ("contains-any", "x, world", "hello world", True),  # a string is split on commas
    ("contains-any", '"a,b", c', "has a,b in it", True),  # quote-aware: "a,b" is one value
    ("contains-any", '"a,b", c', "has a and b", False),
    ("contains-any", 'say ""hi"", x', 'say "hi"', False),  # "" only escapes inside a quoted field
    ("contains-any", '"say ""hi""", x', 'they say "hi"', True),
    ("contains-any", r'"say \"hi\"", x', 'they say "hi"', True),
    ("contains-all", ["hello", "world"], "hello world", True),
    ("contains-all", ["hello", "moon"], "hello world", False),
    ("not-contains-all", ["hello", "moon"], "hello world", True),
    ("not-contains-any", ["moon", "sun"], "hello world", True),
    ("icontains-any", "MOON, WORLD", "hello world", True),
    ("icontains-all", ["HELLO", "WORLD"], "hello world", True),
    ("regex", r"\d{3}-\d{4}", "call 555-1234", True),
    ("regex", "^HELLO", "hello", False),  # no flags: case-sensitive
    ("not-regex", r"\d", "no digits", True),
    ("regex", "(?<year>\\d{4})", "in 2024", True),  # JavaScript named groups
    ("regex", "([a-z", "anything", False),  # an invalid pattern fails
    ("not-regex", "([a-z", "anything", False),  # …even under not-
    ("starts-with", "Hello", "Hello world", True),
    ("starts-with", "world", "Hello world", False),
    ("not-starts-with", "world", "Hello world", True),
    ("is-json", None, '{"a": 1}', True),
    ("is-json", None, "42", True),  # JSON.parse accepts any JSON value
    ("is-json", None, "[]", True),
    ("is-json", None, "null", True),
    ("is-json", None, "{'a': 1}", False),
    ("is-json", None, "NaN", False),
    ("is-json", None, '```json\n{"a": 1}\n```', False),
    ("not-is-json", None, "plain text", True),
    ("is-json", {"type": "object", "required": ["a"]}, '{"a": 1}', True),
    ("is-json", {"type": "object", "required": ["a"]}, '{"b": 1}', False),
    ("is-json", "type: object\nrequired: [a]", '{"a": 1}', True),  # a YAML/JSON string schema
    ("is-json", {"type": "object"}, "42", False),
    ("not-is-json", {"type": "object", "required": ["a"]}, '{"b": 1}', True),
    ("contains-json", None, 'Here: {"a": 1} done', True),
    ("contains-json", None, "Here: [1, 2] done", False),  # objects only
    ("contains-json", None, "no json {here", False),
    ("contains-json", {"type": "object", "required": ["b"]}, '{"a": 1} and {"b": 2}', True),  # any object validates
    ("contains-json", {"type": "object", "required": ["c"]}, '{"a": 1} and {"b": 2}', False),
    ("not-contains-json", None, "plain", True),
    ("levenshtein", "hello", "hallo", True),
    ("levenshtein", "hello", "hello world", False),  # distance 6 > default 5
    ("levenshtein", "hello", "hello!!!!!", True),  # distance 5 <= 5
])
def test_deterministic_rules(kind, value, text, passed):
    result = check(kind, value, text)
    assert result.passed is passed, result.reason
    assert result.score == (1.0 if passed else 0.0)
    assert (result.reason == "Assertion passed") is passed


def test_levenshtein_threshold_and_negation_ignored():
    assert check("levenshtein", "abc", "abd", threshold=1).passed
    assert not check("levenshtein", "abc", "xyz", threshold=2).passed
    assert check("levenshtein", "abc", "abcdefgh", threshold=0).passed  # `threshold || 5`: 0 means 5
    assert check("not-levenshtein", "hello", "hallo").passed  # not- is ignored, as promptfoo's handler does
    assert "Levenshtein distance 6 is greater than threshold 5" in check("levenshtein", "hello", "hello world").reason


@pytest.mark.parametrize("kind, value", [
    ("contains", ""), ("contains", None), ("contains", 0), ("contains", ["a"]), ("icontains", True),
    ("contains-any", None), ("contains-any", '"open, x'), ("regex", ""), ("regex", None), ("starts-with", 3),
    ("levenshtein", None), ("finish-reason", None),
])
def test_bad_values_make_an_error_not_a_failure(kind, value):
    with pytest.raises(CheckError):
        check(kind, value, "text")


def test_latency():
    assert check("latency", threshold=500, latency_ms=120).passed
    failed = check("latency", threshold=100, latency_ms=120)
    assert not failed.passed and failed.reason == "Latency 120ms is greater than threshold 100ms"
    assert check("not-latency", threshold=100, latency_ms=120).passed  # this version honours not-
    metric_only = check("latency", metric="speed", latency_ms=87.4)
    assert metric_only.passed and metric_only.score == 87
    with pytest.raises(CheckError, match="does not support cached results"):
        check("latency", threshold=100, latency_ms=None)  # a cached / given output: ERROR, not FAIL
    with pytest.raises(CheckError, match="must set `metric`"):
        check("latency", latency_ms=10)
    with pytest.raises(CheckError, match="requires a threshold"):
        check("not-latency", metric="m", latency_ms=10)


@pytest.mark.parametrize("reason, normal", [("stop", "stop"), ("length", "length"), ("end_turn", "stop"),
                                            ("MAX_TOKENS", "length"), ("tool_use", "tool_calls"), ("cancelled", None),
                                            ("error", None), (None, None)])
def test_finish_reason_normalisation(reason, normal):
    assert normalise_finish_reason(reason) == normal


def test_finish_reason():
    assert check("finish-reason", "STOP", finish_reason="stop").passed  # case-insensitive
    assert check("finish-reason", "length", finish_reason="max_tokens").passed
    wrong = check("finish-reason", "stop", finish_reason="length")
    assert not wrong.passed and wrong.reason == 'Expected finish reason "stop" but got "length"'
    missing = check("finish-reason", "stop", finish_reason=None)
    assert not missing.passed and missing.reason == "Provider did not supply stop/finish reason"
    assert not check("not-finish-reason", "stop", finish_reason="length").passed  # not- ignored


def test_perplexity():
    logprobs = [-0.1, -0.5, -0.3]  # mean -0.3: perplexity e^0.3 = 1.3499
    assert check("perplexity", threshold=1.4, logprobs=logprobs).passed
    assert not check("perplexity", threshold=1.3, logprobs=logprobs).passed
    assert check("perplexity", logprobs=logprobs).passed  # no threshold: pass
    score = check("perplexity-score", threshold=0.4, logprobs=logprobs)
    assert score.passed and score.score == pytest.approx(1 / (1 + 1.3498588))
    assert not check("perplexity-score", threshold=0.5, logprobs=logprobs).passed
    assert check("not-perplexity", threshold=1.4, logprobs=logprobs).passed  # not- ignored
    with pytest.raises(CheckError, match="logProbs"):
        check("perplexity", threshold=2, logprobs=None)
    with pytest.raises(CheckError, match="logProbs"):
        check("perplexity-score", threshold=0.5, logprobs=[])


def test_weight_zero_forces_a_pass():
    result = check("contains", "moon", "hello world", weight=0)
    assert result.passed and result.score == 0.0


def test_json_objects_extracts_left_to_right():
    assert json_objects('a {"x": 1} b {"y": {"z": 2}} c {bad} {"w": [1]}') == [{"x": 1}, {"y": {"z": 2}}, {"w": [1]}]
    assert json_objects("{{{") == []
