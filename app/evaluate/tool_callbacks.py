"""promptfoo's `functionToolCallbacks` on a chat provider: a map of tool name -> JavaScript (a function written
inline, or `file://path.js:functionName`), run when the model calls that tool.

As promptfoo 0.123.1's OpenAI chat provider does (providers/openai/chat.ts, functionCallbackUtils.ts
`executeProviderFunctionCallback`): each call of a tool that has a callback runs it with the call's arguments as
the JSON string the model wrote; what it returns becomes text (undefined or null: "", an object: JSON.stringify, else
String(value)); the provider's output is the callbacks' results joined by newlines, and the model is not asked
again. Calls of tools without a callback are left out of that output. When a callback throws, promptfoo keeps the
model's reply as the output: so does Chorus. A callback that runs past its time or memory limit (the limits of
JavaScript checks: js_code.py) makes the cell an ERROR. The JavaScript runs in the embedded V8 that runs
`javascript` assertions, and only once the user allowed the config's code (`code_checks.code_uses` names it).
"""

from __future__ import annotations

import json
from pathlib import Path

from app.evaluate import js_code
from app.evaluate.check_types import CheckError
from app.evaluate.errors import Problems
from app.evaluate.file_refs import split_file
from app.evaluate.templates import js_string

KEY = "functionToolCallbacks"
_JS_SUFFIXES = (".js", ".cjs", ".mjs")


def check(value, base: Path, where: str, problems: Problems) -> dict[str, str] | None:
    """The callbacks as written, or None after a problem (a file that is missing or not JavaScript)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        problems.add(f"{where}.config.{KEY}", "a map of tool name -> JavaScript (a function, or file://x.js:name)")
        return None
    for name, ref in value.items():
        if ref.startswith("file://"):
            path, _function = split_file(ref, base)
            if path.suffix not in _JS_SUFFIXES:
                problems.unsupported(f"{where}.config.{KEY}.{name}", f"a callback in {path.suffix or 'a file'} "
                                     f"({path.name})", "Chorus runs callbacks written in JavaScript")
            elif not path.is_file():
                problems.add(f"{where}.config.{KEY}.{name}", f"no such file: {path}")
    return dict(value)


def uses(label: str, callbacks: dict[str, str] | None, base: Path | None) -> list[str]:
    """One consent line per callback (what runs the user's code)."""
    lines = []
    for name, ref in (callbacks or {}).items():
        if ref.startswith("file://"):
            path, function = split_file(ref, base)
            lines.append(f"provider {label} tool callback {name}: the file {path}"
                         + (f" (function {function})" if function else ""))
        else:
            first = " ".join(ref.split())
            more = "…" if len(first) > 70 else ""
            lines.append(f"provider {label} tool callback {name} (inline): {first[:70]}{more}")
    return lines


def _text(value) -> str:
    """promptfoo's conversion of a callback's result to the tool result."""
    if value.undefined or value.value is None:
        return ""
    if value.type == "object":
        return json.dumps(value.value, ensure_ascii=False, separators=(",", ":"))
    return js_string(value.value)


def call(callback: str, arguments, base: Path | None, time_limit: float) -> js_code.JsResult:
    """Run one callback on the call's arguments (a JSON string, as the model wrote them)."""
    if callback.startswith("file://"):
        path, function = split_file(callback, base)
        return js_code.call(None, path, function, ("args",), [arguments], time_limit, "callback")
    return js_code.call(f"return (\n{callback}\n)(args);", None, None, ("args",), [arguments], time_limit,
                        "callback")


def run(callbacks: dict[str, str], tool_calls, base: Path | None, time_limit: float) -> str | None:
    """The provider's output after the callbacks of these tool calls ran, or None when promptfoo keeps the model's
    reply (no call has a callback, or one threw). Raises CheckError when a callback ran past its limit."""
    results = []
    for tool_call in tool_calls or ():
        name = tool_call.get("name", "")
        if name not in callbacks:
            continue
        try:
            found = call(callbacks[name], tool_call.get("arguments"), base, time_limit)
        except js_code.CodeLimit as exc:
            raise CheckError(f"the tool callback {name}: {exc}") from None
        except OSError as exc:
            raise CheckError(f"the tool callback {name}: {exc}") from None
        if found.error is not None:
            return None  # promptfoo: "Function callback failed ..., falling back to original output"
        results.append(_text(found.value))
    return "\n".join(results) if results else None
