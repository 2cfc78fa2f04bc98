"""`levenshtein` as promptfoo runs it (fastest-levenshtein counts JavaScript's UTF-16 code units) and Chorus's own
`word-error-rate` assertion (app/session/word_errors.py), in configs, CSV cells and graded cells."""

import pytest

from app.evaluate.assertion_strings import assertion_from_string
from app.evaluate.checks import CheckError, Output, run_check
from app.session.evaluation import Assertion


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
