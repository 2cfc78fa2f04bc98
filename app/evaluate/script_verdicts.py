"""What a code check's return value means, with promptfoo 0.123.1's semantics (scriptResultNormalization.ts,
src/assertions/python.ts and ruby.ts), and how an inline Python or Ruby check becomes a `main(output, context)`.

A boolean passes as it is; a number is the score and passes when > 0, or ≥ the assertion's `threshold`; a
GradingResult ({pass, score, reason}) is taken as it is (Python and Ruby: snake_case keys too, the score held to the
threshold; "true"/"false" and JSON text are read as promptfoo reads them); `not-` flips the verdict.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from app.evaluate.templates import js_string
from app.session.evaluation import Assertion, GradingResult


@dataclass(frozen=True)
class Language:
    name: str  # "Python": promptfoo's `language` label in its messages
    header: str  # what precedes an inline check's body
    indent: str  # the body's indent when the check is one line, or none of its lines is indented
    footer: str = ""

    @property
    def code(self) -> str:
        return f"{self.name} code"


PYTHON = Language("Python", "import json\n\ndef main(output, context):\n", "    ")
RUBY = Language("Ruby", "require 'json'\n\ndef main(output, context)\n", "  ", "end\n")
SCRIPT_LANGUAGES = {"python": PYTHON, "ruby": RUBY}


def inline_script(value: str, language: Language) -> str:
    """promptfoo's buildPythonScript / buildRubyScript: a one-liner is returned; several lines are the body of
    main(), indented as the value's first indented line is. The header is 3 lines (the workers count from it)."""
    if "\n" in value:
        indent = language.indent
        for line in value.split("\n"):
            stripped = line.lstrip()
            if stripped and line != stripped:
                indent = line[:len(line) - len(stripped)]
                break
        body = "\n".join(f"{indent}{line}" for line in value.split("\n"))
    else:
        body = f"{language.indent}return {value}"
    return f"{language.header}{body}\n{language.footer}"


def located(result) -> str | None:
    """A Python or Ruby failure's message, after the file and line it happened at."""
    if result.error is None:
        return None
    return f"{result.where}: {result.error}" if result.where else result.error


def _with_suffix(reason: str, suffix) -> str:
    return f"{reason}\n{suffix}" if isinstance(suffix, str) and suffix else reason


def failed(a: Assertion, reason: str, suffix) -> GradingResult:
    return GradingResult(passed=False, score=0.0, reason=_with_suffix(reason, suffix), assertion=a)


def primitive(a: Assertion, result, inverse: bool, code: str, suffix) -> GradingResult:
    if isinstance(result, bool):
        passed = result != inverse
        return GradingResult(passed=passed, score=1.0 if passed else 0.0, assertion=a, reason="Assertion passed"
                             if passed else _with_suffix(f"{code} returned {'true' if result else 'false'}", suffix))
    raw = result > 0 if a.threshold is None else result >= a.threshold
    passed = raw != inverse
    return GradingResult(passed=passed, score=float(result), assertion=a, reason="Assertion passed" if passed
                         else _with_suffix(f"{code} returned {'true' if raw else 'false'}", suffix))


def object_result(a: Assertion, obj: dict, inverse: bool, code: str) -> GradingResult:
    passed = obj["pass"] != inverse
    reason = obj["reason"] if passed == obj["pass"] else (
        "Assertion passed" if passed else f"{code} returned {'true' if obj['pass'] else 'false'}")
    named = {k: float(v) for k, v in (obj.get("namedScores") or {}).items() if isinstance(v, (int, float))}
    return GradingResult(passed=passed, score=float(obj["score"]), reason=reason, named_scores=named, assertion=a)


def is_grading(obj) -> bool:
    return (isinstance(obj, dict) and isinstance(obj.get("pass"), bool) and isinstance(obj.get("score"), (int, float))
            and not isinstance(obj.get("score"), bool) and isinstance(obj.get("reason"), str))


def script_result(a: Assertion, result, inverse: bool, suffix, language: Language = PYTHON) -> GradingResult:
    """promptfoo's normalizeScriptResult for Python and Ruby; raises ValueError as promptfoo throws."""
    name, code = language.name, language.code
    lower = result.lower() if isinstance(result, str) else None
    if result is True or lower == "true":
        return primitive(a, True, inverse, code, suffix)
    if result is False or lower == "false":
        return primitive(a, False, inverse, code, suffix)
    if isinstance(result, str) and result.startswith("{"):
        try:
            result = json.loads(result)
        except ValueError as exc:
            raise ValueError(f"Invalid JSON: {exc} when parsing result: {result}") from None
    if isinstance(result, list):  # promptfoo spreads it into an object: {"0": …, "1": …}
        result = {str(i): item for i, item in enumerate(result)}
    if isinstance(result, dict):
        obj = dict(result)
        for snake, camel in (("pass_", "pass"), ("named_scores", "namedScores")):
            if snake in obj and camel not in obj:
                obj[camel] = obj[snake]
        if not is_grading(obj):
            raise ValueError(f"{name} assertion must return a boolean, number, or {{pass, score, reason}} object. "
                             f"Got instead:\n{json.dumps(obj, indent=2, ensure_ascii=False)}")
        if a.threshold is not None and obj["score"] < a.threshold:
            message = f"{name} score {js_string(obj['score'])} is less than threshold {js_string(a.threshold)}"
            obj["pass"] = False
            obj["reason"] = f"{message}: {obj['reason']}" if obj["reason"] else message
        return object_result(a, obj, inverse, code)
    try:
        score = float(result) if result is not None else math.nan
    except (TypeError, ValueError):
        score = math.nan
    if math.isnan(score):
        raise ValueError(f"{name} assertion must return a boolean, number, or {{pass, score, reason}} object. "
                         f"Instead got:\n{'null' if result is None else js_string(result)}")
    return primitive(a, score, inverse, code, suffix)
