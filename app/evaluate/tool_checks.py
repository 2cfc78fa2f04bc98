"""promptfoo's tool-call assertions (src/assertions/openai.ts, toolCallF1.ts; rules in docs/evaluate.md).

`is-valid-openai-tools-call`: the output's calls (Output.tool_calls, else the text as JSON) must be a non-empty
list whose first entry has a string name and string arguments; then every call must name a tool of the
provider's `config.tools` and its arguments (JSON text) must validate against that tool's `parameters`.
`tool-call-f1`: the set of names called against the expected names (a list, or comma-separated): precision,
recall and their harmonic mean, which passes at `threshold` (default 1). Order and repeats do not count.
"""

from __future__ import annotations

import json
import re

import jsonschema

from app.evaluate.check_types import CheckError, Output, verdict
from app.session.evaluation import Assertion

_LINE_START = re.compile(r"(?m)^[ \t]*([\[{])")


def _calls(out: Output):
    """The calls as promptfoo sees them: the reply's tool_calls (OpenAI's shape), else the text parsed."""
    if out.tool_calls:
        return [{"type": "function", "id": c.get("id", ""),
                 "function": {"name": c.get("name"), "arguments": c.get("arguments")}} for c in out.tool_calls]
    try:
        value = json.loads(out.text)
    except json.JSONDecodeError:
        return out.text
    return value.get("tool_calls", value) if isinstance(value, dict) else value


def _valid_tools_call(a: Assertion, value, out: Output, inverse: bool):
    calls = _calls(out)
    first = calls[0] if isinstance(calls, list) and calls else None
    fn = first.get("function") if isinstance(first, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not isinstance(fn.get("arguments"), str):
        return verdict(False, f"OpenAI did not return a valid-looking tools response: {json.dumps(calls)}", a)
    if not out.tools:
        raise CheckError("is-valid-openai-tools-call needs the provider's config.tools, and it has none")
    schemas = {t["function"]["name"]: t["function"].get("parameters") for t in out.tools}
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("arguments"), str):
            return verdict(False, f"OpenAI did not return a valid-looking function call: {json.dumps(fn)}", a)
        name = fn.get("name")
        if name not in schemas or schemas[name] is None:
            return verdict(False, f'Called "{name}", but there is no function with that name', a)
        try:
            jsonschema.validate(json.loads(fn["arguments"]), schemas[name])
        except json.JSONDecodeError as exc:
            return verdict(False, f'Call to "{name}" has arguments that are not JSON: {exc.msg}', a)
        except jsonschema.ValidationError as exc:
            return verdict(False, f'Call to "{name}" does not match schema: {exc.message}', a)
    return verdict(True, "", a)


def _names(value) -> set[str]:
    """The tool names in one parsed output (OpenAI tool_calls, a list of calls, or {name})."""
    if isinstance(value, dict):
        if isinstance(value.get("tool_calls"), list):
            return _names(value["tool_calls"])
        if isinstance(value.get("function"), dict) and isinstance(value["function"].get("name"), str):
            return {value["function"]["name"]}
        return {value["name"]} if isinstance(value.get("name"), str) and value.get("type") in (
            None, "function_call", "tool_use") else set()
    if isinstance(value, list):
        return set().union(*(_names(item) for item in value if isinstance(item, dict)))
    return set()


def called_names(out: Output) -> set[str]:
    if out.tool_calls:
        return {c["name"] for c in out.tool_calls if isinstance(c.get("name"), str)}
    try:
        return _names(json.loads(out.text))
    except json.JSONDecodeError:
        return set().union(*(_names(block) for block in _line_blocks(out.text)))


def _line_blocks(text: str) -> list:
    """JSON values that start a line of mixed text (promptfoo reads serialized calls joined at line starts)."""
    decoder, found = json.JSONDecoder(), []
    for match in _LINE_START.finditer(text):
        try:
            found.append(decoder.raw_decode(text, match.start(1))[0])
        except json.JSONDecodeError:
            continue
    return found


def _tool_call_f1(a: Assertion, value, out: Output, inverse: bool):
    if isinstance(value, list):
        wanted = [str(v).strip() for v in value]
    elif isinstance(value, str):
        wanted = [v.strip() for v in value.split(",")]
    else:
        raise CheckError('"tool-call-f1" assertion requires a value: array of tool names or comma-separated string')
    expected = {v for v in wanted if v}
    if not expected:
        raise CheckError('"tool-call-f1" assertion requires at least one expected tool name')
    actual = called_names(out)
    hits = len(expected & actual)
    precision = hits / len(actual) if actual else 0.0
    recall = hits / len(expected)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    threshold = a.threshold if a.threshold is not None else 1.0
    passed = (f1 >= threshold) != inverse
    listed = f"Expected: [{', '.join(sorted(expected))}], Called: [{', '.join(sorted(actual)) or '(none)'}]"
    if passed:
        reason = f"Tool Call F1: {f1:.3f} (precision={precision:.3f}, recall={recall:.3f}). {listed}"
    else:
        reason = (f"Tool Call F1 score {f1:.3f} is {'above' if inverse else 'below'} threshold {threshold:g}. "
                  f"{listed}. Precision={precision:.3f}, Recall={recall:.3f}")
    result = verdict(passed, reason, a, score=f1)
    result.reason = reason
    return result


TOOL_CHECKS = {"is-valid-openai-tools-call": _valid_tools_call, "tool-call-f1": _tool_call_f1}
