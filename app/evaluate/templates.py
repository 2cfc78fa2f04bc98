"""Prompt templates as promptfoo renders them (Nunjucks), with Jinja2's sandbox.

Rules kept (promptfoo src/util/templates.ts, src/evaluatorHelpers.ts):
- `{{var}}` syntax; autoescape off; an undefined variable (or a member of one) renders as "".
- Filters `load` (= JSON.parse) and `dump` (= JSON.stringify); the global `env` (the process environment).
- A string var loses one trailing "\\n"; a var that mentions `{{other}}` vars is resolved first (at most 5 passes).
- A prompt that parses as JSON (a chat prompt: a list of {role, content}) is rendered string leaf by string leaf
  and re-serialised with 2-space indentation, so a var holding quotes cannot break the JSON.
Values print as JavaScript prints them (true, false, 1 for 1.0, "" for null); objects and lists print as JSON
(Nunjucks would print "[object Object]": a deliberate difference).
"""

from __future__ import annotations

import json
import math
import os
import re

import yaml
from jinja2 import ChainableUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

MAX_VAR_PASSES = 5
_VAR_REFERENCE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def js_string(value) -> str:
    """`String(value)` as JavaScript gives it, for the values YAML, JSON and CSV produce."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))  # JSON.stringify(value)
    return str(value)


def js_fixed(value: float, digits: int = 2) -> str:
    """JavaScript's `value.toFixed(digits)`: the exact binary value rounded half up (0.625 → "0.63")."""
    from decimal import ROUND_HALF_UP, Decimal

    return str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _finalize(value):
    return "" if isinstance(value, ChainableUndefined) else js_string(value)


def _dump(value, indent=None) -> str:
    separators = (",", ":") if indent is None else None  # JSON.stringify(value) has no spaces
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)


_ENV = SandboxedEnvironment(autoescape=False, undefined=ChainableUndefined, keep_trailing_newline=True,
                            finalize=_finalize)
_ENV.filters["load"] = json.loads
_ENV.filters["dump"] = _dump


class TemplateProblem(ValueError):
    """A template that does not parse or render; the message names the template's start and the cause."""


def check(template: str) -> str | None:
    """Why the template cannot be parsed, or None when it can."""
    try:
        _ENV.parse(template)
    except TemplateError as exc:
        return f"template error: {exc}"
    return None


def environment(filters: dict | None = None) -> SandboxedEnvironment:
    """The template environment, with the config's `nunjucksFilters` (name → callable) added when there are any."""
    if not filters:
        return _ENV
    env = _ENV.overlay()
    env.filters = {**_ENV.filters, **filters}
    return env


def render(template: str, variables: dict, env: SandboxedEnvironment = _ENV) -> str:
    """Render one template string with the given variables (see the module rules)."""
    if "{" not in template:
        return template
    try:
        return env.from_string(template).render({"env": dict(os.environ), **variables})
    except TemplateError as exc:
        start = template[:40].replace("\n", " ")
        raise TemplateProblem(f"template {start!r}…: {exc}") from exc


def prepare_vars(variables: dict) -> dict:
    """The variables a prompt sees: one trailing newline off each string, `{{other}}` references resolved."""
    prepared = {k: (v[:-1] if isinstance(v, str) and v.endswith("\n") else v) for k, v in variables.items()}
    for _ in range(MAX_VAR_PASSES):
        changed = False
        for key, value in prepared.items():
            if not isinstance(value, str) or "{{" not in value:
                continue

            def substitute(match, key=key):
                name = match.group(1)
                if name != key and name in prepared and isinstance(prepared[name], str):
                    return prepared[name]
                return match.group(0)

            resolved = _VAR_REFERENCE.sub(substitute, value)
            if resolved != value:
                prepared[key] = resolved
                changed = True
        if not changed:
            break
    return prepared


def _render_leaves(node, variables: dict, env: SandboxedEnvironment):
    if isinstance(node, str):
        return render(node, variables, env)
    if isinstance(node, list):
        return [_render_leaves(item, variables, env) for item in node]
    if isinstance(node, dict):
        return {key: _render_leaves(value, variables, env) for key, value in node.items()}
    return node


def render_prompt(raw: str, variables: dict, filters: dict | None = None) -> str:
    """The prompt text a provider receives for these test variables; `filters`: the config's nunjucksFilters."""
    prepared, env = prepare_vars(variables), environment(filters)
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if isinstance(parsed, (list, dict)):
        return json.dumps(_render_leaves(parsed, prepared, env), ensure_ascii=False, indent=2)
    return render(raw, prepared, env)


def render_value(value, variables: dict):
    """An assertion's value (or metric name) rendered with the test vars: strings, and strings inside lists."""
    if isinstance(value, str):
        return render(value, variables)
    if isinstance(value, list):
        return [render(item, variables) if isinstance(item, str) else item for item in value]
    return value


def chat_messages(prompt: str) -> list[dict] | None:
    """The messages of a chat prompt, or None for a plain-text prompt: a JSON list of {role, content}, or (as
    promptfoo's parseChatPrompt reads a prompt whose text starts `- role:`) the same list written in YAML."""
    stripped = prompt.strip()
    if stripped.startswith("- role:"):
        try:
            parsed = yaml.safe_load(prompt)
        except (yaml.YAMLError, RecursionError):
            return None
    elif not stripped.startswith("["):
        return None
    else:
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return None
    if parsed and isinstance(parsed, list) and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m for m in parsed):
        return [{"role": m["role"], "content": _content(m["content"])} for m in parsed]
    return None


def _content(value) -> str | list[dict]:
    """A message's content: text, or OpenAI parts kept as parts when they hold an image or a clip (an `image_url`
    part, whose url a `file://` image var has become a data URL, or an `input_audio` part, whose data an audio var
    has become the file's base64: case_files.load_file_vars)."""
    media = ("image_url", "input_audio", "video_url", "input_video")
    if isinstance(value, list) and value and all(isinstance(p, dict) and p.get("type") in ("text", *media)
                                                 for p in value) and any(p["type"] in media for p in value):
        return [{"type": "text", "text": js_string(p.get("text"))} if p["type"] == "text" else p for p in value]
    return js_string(value)
