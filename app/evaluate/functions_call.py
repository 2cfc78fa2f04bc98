"""promptfoo's legacy `functions` provider setting and the `is-valid-openai-function-call` assertion
(alias `is-valid-function-call`; src/assertions/functionToolCall.ts, providers/openai/util.ts
validateFunctionCall).

`functions` (with `function_call`: "auto", "none" or {name}) is offered to the model as tools, so a local model
can call them. The check reads the output's function call: the reply's first tool call ({name, arguments}),
else the output as JSON (an object's `function_call`, or the object itself), else the text; it must be an object
with a string `name` and string `arguments`; the arguments must parse as JSON and validate against the
`parameters` of the function of that name among the provider's `functions`. Every failure fails the check (score
0) with promptfoo's reason; a provider without `functions` fails it too ("no function with that name").
`not-` is ignored, as promptfoo's handler ignores it.
"""

from __future__ import annotations

import json

import jsonschema

from app.evaluate.check_types import Output, verdict
from app.evaluate.errors import Problems
from app.session.evaluation import Assertion, GradingResult

TYPES = frozenset({"is-valid-openai-function-call", "is-valid-function-call"})


def as_tools(config: dict, where: str, problems: Problems) -> dict:
    """The config with `functions` (and `function_call`) added to its `tools` (and `tool_choice`)."""
    functions, choice = config.get("functions"), config.get("function_call")
    if functions is None:
        return config
    if not isinstance(functions, list) or not all(isinstance(f, dict) and isinstance(f.get("name"), str)
                                                  for f in functions):
        problems.add(f"{where}.config.functions", "functions is a list of {name, description, parameters}")
        return {k: v for k, v in config.items() if k not in ("functions", "function_call")}
    config = {k: v for k, v in config.items() if k not in ("functions", "function_call")}
    tools = config.get("tools")
    if tools is not None and not isinstance(tools, list):
        problems.add(f"{where}.config", "functions beside tools from a file: give the tools as a list")
        return config
    config["tools"] = [*(tools or []), *({"type": "function", "function": f} for f in functions)]
    if isinstance(choice, dict) and isinstance(choice.get("name"), str):
        config["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    elif isinstance(choice, str):
        config["tool_choice"] = choice
    return config


def _call(out: Output):
    if out.tool_calls:
        first = out.tool_calls[0]
        return {"name": first.get("name"), "arguments": first.get("arguments")}
    value = out.raw
    if value is None:
        try:
            value = json.loads(out.text)
        except ValueError:
            return out.text
    if isinstance(value, dict) and "function_call" in value:
        return value["function_call"]
    return value


def _js_json(value) -> str:
    return "undefined" if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def check(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    call = _call(out)
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(
            call.get("arguments"), str):
        return verdict(False, f"OpenAI did not return a valid-looking function call: {_js_json(call)}", a)
    try:
        arguments = json.loads(call["arguments"])
    except ValueError as exc:
        return verdict(False, f"{exc.msg} in JSON at position {exc.pos}", a)
    name = call["name"]
    schema = next((f.get("parameters") for f in out.functions if f.get("name") == name), None)
    if not schema:
        return verdict(False, f'Called "{name}", but there is no function with that name', a)
    errors = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(arguments), key=str)
    if errors:
        shown = [{"instancePath": "".join(f"/{p}" for p in e.absolute_path), "message": e.message} for e in errors]
        return verdict(False, f'Call to "{name}" does not match schema: {json.dumps(shown)}', a)
    return verdict(True, "", a)
