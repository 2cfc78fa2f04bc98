"""Deterministic assertions with promptfoo's names and rules (src/assertions/*.ts; notes file, section 3).

Each check takes the assertion, its value already rendered with the test vars, and the cell's output, and
returns a GradingResult; a check that cannot be evaluated (a bad value, latency on a cached result, perplexity
without log-probabilities) raises CheckError, which makes the cell an ERROR, not a FAIL, as in promptfoo.
`not-` flips the verdict, except for the types in NEGATION_IGNORED, whose handlers ignore it in promptfoo too.
"""

from __future__ import annotations

import array
import json
import math
import re

import jsonschema
import yaml
from rapidfuzz.distance import Levenshtein

from app.evaluate import cost, functions_call, sql_check, tool_checks
from app.evaluate.assertion_strings import split_values
from app.evaluate.check_types import CheckError, Output, verdict
from app.evaluate.templates import js_string
from app.session.evaluation import Assertion, GradingResult
from app.session.word_errors import shown, word_errors

__all__ = ["CHECKS", "CheckError", "Output", "json_objects", "normalise_finish_reason", "run_check", "verdict"]

NEGATION_IGNORED = frozenset({"levenshtein", "perplexity", "perplexity-score", "finish-reason",
                              "is-valid-openai-tools-call", *functions_call.TYPES})
_FINISH = {"stop": "stop", "end_turn": "stop", "stop_sequence": "stop", "length": "length", "max_tokens": "length",
           "content_filter": "content_filter", "tool_calls": "tool_calls", "function_call": "tool_calls",
           "tool_use": "tool_calls"}


def normalise_finish_reason(reason: str | None) -> str | None:
    """promptfoo's normalizeFinishReason: provider words to stop / length / content_filter / tool_calls."""
    if not reason or reason in ("cancelled", "error"):
        return None
    return _FINISH.get(reason.lower(), reason.lower())


def _require_string(value, kind: str, allow_number: bool = False) -> str:
    if isinstance(value, bool) or not (isinstance(value, str) or (allow_number and isinstance(value, (int, float)))):
        raise CheckError(f'"{kind}" assertion type must have a string{" or number" if allow_number else ""} value')
    return js_string(value)


def _equals(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    if isinstance(value, (dict, list)):
        try:
            equal = json.loads(out.text) == value
        except ValueError:
            equal = False
        shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        shown = js_string(value)
        equal = shown == out.text
    passed = equal != inverse
    return verdict(passed, f'Expected output "{out.text}" to {"not " if inverse else ""}equal "{shown}"', a)


def _contains(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    kind = a.base_type
    if not value:  # JavaScript's invariant(value): "", 0, null and false are refused
        raise CheckError(f'"{kind}" assertion type must have a string or number value')
    needle = _require_string(value, kind, allow_number=True)
    haystack = out.text
    if kind == "icontains":
        needle, haystack = needle.lower(), haystack.lower()
    passed = (needle in haystack) != inverse
    return verdict(passed, f'Expected output to {"not " if inverse else ""}contain "{js_string(value)}"', a)


def _contains_many(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    kind = a.base_type
    if not value:
        raise CheckError(f'"{kind}" assertion type must have a value')
    if isinstance(value, str):
        try:
            value = split_values(value)
        except ValueError as exc:
            raise CheckError(str(exc)) from None
    if not isinstance(value, list):
        raise CheckError(f'"{kind}" assertion type must have an array or string value')
    items = [js_string(v) for v in value]
    fold = kind.startswith("i")
    haystack = out.text.lower() if fold else out.text
    found = [(item.lower() if fold else item) in haystack for item in items]
    if kind.endswith("-any"):
        passed = any(found) != inverse
        reason = f'Expected output to {"not " if inverse else ""}contain one of "{", ".join(items)}"'
    else:
        passed = all(found) != inverse
        missing = [item for item, hit in zip(items, found, strict=True) if not hit]
        reason = (f'Expected output to not contain all of "{", ".join(items)}"' if inverse else
                  f'Expected output to contain all of [{", ".join(items)}]. Missing: [{", ".join(missing)}]')
    return verdict(passed, reason, a)


def _js_regex(pattern: str) -> re.Pattern:
    """A JavaScript pattern in Python's syntax: named groups (?<name>…) become (?P<name>…)."""
    return re.compile(re.sub(r"\(\?<(?![=!])", "(?P<", pattern))


def _regex(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    if not value or not isinstance(value, str):
        raise CheckError('"regex" assertion type must have a string value')
    try:
        pattern = _js_regex(value)
    except re.error as exc:
        return verdict(False, f"Invalid regex pattern: {exc}", a)
    passed = (pattern.search(out.text) is not None) != inverse
    return verdict(passed, f'Expected output to {"not " if inverse else ""}match regex "{value}"', a)


def _starts_with(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    prefix = _require_string(value, "starts-with")
    passed = out.text.startswith(prefix) != inverse
    return verdict(passed, f'Expected output to {"not " if inverse else ""}start with "{prefix}"', a)


def _schema(value, a: Assertion):
    """A validator for the assertion's schema (object, YAML/JSON text), or a failing GradingResult."""
    try:
        schema = yaml.safe_load(value) if isinstance(value, str) else value
        if not isinstance(schema, (bool, dict)):
            raise ValueError(f"{a.type} assertion must have a string, boolean, or object value")
        validator = jsonschema.validators.validator_for(schema)(schema)
        validator.check_schema(schema)
        return validator
    except (ValueError, yaml.YAMLError, jsonschema.SchemaError) as exc:
        return verdict(False, f"Invalid JSON schema: {exc}", a)


def _schema_errors(validator, instance) -> str:
    return "; ".join(f"{'/'.join(map(str, e.absolute_path)) or 'data'} {e.message}"
                     for e in validator.iter_errors(instance))


def _strict_json(text: str):
    def reject(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=reject)


def _is_json(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    try:
        parsed, passed = _strict_json(out.text), not inverse
    except ValueError:
        parsed, passed = None, inverse
    if passed != inverse and value not in (None, ""):
        validator = _schema(value, a)
        if isinstance(validator, GradingResult):
            return validator
        errors = _schema_errors(validator, parsed)
        passed = bool(errors) if inverse else not errors
        if not passed:
            return verdict(False, "Output is JSON that conforms to the provided schema" if inverse else
                           f"JSON does not conform to the provided schema. Errors: {errors}", a)
    return verdict(passed, "Expected output to be valid JSON", a)


def json_objects(text: str) -> list:
    """Every JSON object in the text, left to right (promptfoo's extractJsonObjects)."""
    decoder, found, i = json.JSONDecoder(), [], 0
    while (i := text.find("{", i)) != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if isinstance(value, dict):
            found.append(value)
            i = end
        else:
            i += 1
    return found


def _contains_json(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    objects = json_objects(out.text)
    passed = (not objects) if inverse else bool(objects)
    reason = "Expected output to contain valid JSON"
    if objects and value not in (None, ""):
        validator = _schema(value, a)
        if isinstance(validator, GradingResult):
            return validator
        for obj in objects:
            errors = _schema_errors(validator, obj)
            passed = bool(errors) if inverse else not errors
            if not errors:
                reason = "Output contains JSON conforming to the provided schema" if inverse else reason
                break
            reason = f"JSON does not conform to the provided schema. Errors: {errors}"
    return verdict(passed, reason, a)


def utf16_units(text: str) -> array.array:
    """The text as JavaScript strings hold it: UTF-16 code units (a character outside the BMP is two)."""
    return array.array("H", text.encode("utf-16-le", "surrogatepass"))


def _levenshtein(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    target = _require_string(value, "levenshtein")
    limit = a.threshold or 5  # promptfoo: `threshold || 5`, so 0 means 5
    # fastest-levenshtein compares charCodeAt()s: an emoji is two units there, so distances match promptfoo's
    distance = Levenshtein.distance(utf16_units(out.text), utf16_units(target))
    return verdict(distance <= limit, f"Levenshtein distance {distance} is greater than threshold {js_string(limit)}",
                   a)


WER_THRESHOLD = 0.2  # word-error-rate without a threshold: at most one word in five wrong


def _word_error_rate(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    """Chorus's own (promptfoo has none): the output's word error rate against the value, at most `threshold`
    (WER_THRESHOLD when not given); the score is 1 − rate (0 at worst; the rate itself with not-)."""
    reference = _require_string(value, "word-error-rate")
    limit = WER_THRESHOLD if a.threshold is None else a.threshold
    found = word_errors(reference, out.text)
    rate = found.rate
    within = rate is not None and rate <= limit
    passed = within != inverse
    score = 1.0 - min(rate, 1.0) if rate is not None else 0.0
    detail = f"Word error rate {shown(rate)} ({found.describe()})"
    if passed:
        reason = "Assertion passed: " + detail
    elif rate is None:
        reason = detail
    else:
        reason = f"{detail} is {'at most' if inverse else 'greater than'} threshold {shown(limit)}"
    return GradingResult(passed=passed, score=1.0 - score if inverse else score, reason=reason, assertion=a)


def _latency(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    if out.latency_ms is None:
        raise CheckError("Latency assertion does not support cached results. Rerun the eval with --no-cache")
    ms = round(out.latency_ms)
    if a.threshold is None:
        if inverse:
            raise CheckError("Latency assertion requires a threshold when using not-latency")
        if not a.metric:
            raise CheckError("Latency assertion without a threshold must set `metric` to record as a named metric")
        return verdict(True, "", a, score=float(ms))
    limit = js_string(a.threshold)
    passed = ms > a.threshold if inverse else ms <= a.threshold
    return verdict(passed, f"Latency {ms}ms is less than or equal to threshold {limit}ms" if inverse else
                   f"Latency {ms}ms is greater than threshold {limit}ms", a)


def _finish_reason(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    expected = _require_string(value, "finish-reason")
    actual = normalise_finish_reason(out.finish_reason)
    if actual is None:
        return verdict(False, "Provider did not supply stop/finish reason", a)
    return verdict(expected.lower() == actual, f'Expected finish reason "{expected}" but got "{actual}"', a)


def perplexity(logprobs: list[float] | None, kind: str) -> float:
    if not logprobs:
        raise CheckError(f"{kind} assertion does not support providers that do not return logProbs")
    return math.exp(-sum(logprobs) / len(logprobs))


def _perplexity(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    ppl = perplexity(out.logprobs, "Perplexity")
    passed = ppl <= a.threshold if a.threshold else True
    return verdict(passed, f"Perplexity {ppl:.2f} is greater than threshold {js_string(a.threshold)}", a)


def _perplexity_score(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    norm = 1 / (1 + perplexity(out.logprobs, "perplexity-score"))
    passed = norm >= a.threshold if a.threshold else True
    return verdict(passed, f"Perplexity score {norm:.2f} is less than threshold {js_string(a.threshold)}", a,
                   score=norm)


CHECKS = {"equals": _equals, "contains": _contains, "icontains": _contains, "contains-any": _contains_many,
          "contains-all": _contains_many, "icontains-any": _contains_many, "icontains-all": _contains_many,
          "regex": _regex, "starts-with": _starts_with, "is-json": _is_json, "contains-json": _contains_json,
          "levenshtein": _levenshtein, "latency": _latency, "finish-reason": _finish_reason,
          "perplexity": _perplexity, "perplexity-score": _perplexity_score, "word-error-rate": _word_error_rate}
NEEDS_LOGPROBS = frozenset({"perplexity", "perplexity-score"})
CHECKS.update(tool_checks.TOOL_CHECKS)
CHECKS.update({"cost": cost.check_cost, **dict.fromkeys(functions_call.TYPES, functions_call.check),
               **dict.fromkeys(sql_check.TYPES, sql_check.check)})


def run_check(assertion: Assertion, value, output: Output) -> GradingResult:
    """One deterministic assertion on one output. Raises CheckError when it cannot be evaluated."""
    kind = assertion.base_type
    inverse = assertion.negated and kind not in NEGATION_IGNORED
    result = CHECKS[kind](assertion, value, output, inverse)
    if assertion.weight == 0:  # promptfoo: weight 0 is a metric-only assertion that cannot fail
        result.passed = True
    return result
