"""A pane's tools: OpenAI-style function definitions, checked before anything is submitted.

A pane keeps its tools as the JSON text the user wrote ("" = none), so a definition that does not check yet is
kept, not lost; `parse_tools` turns that text into the list a request carries, or raises ToolsError naming the
tool and field at fault. `check_tools` does the same for a value already parsed (a `run` JSONL line, a promptfoo
config). A definition is `{"type": "function", "function": {"name", "description"?, "parameters"}}` with a
unique name and `parameters` a valid JSON Schema (checked with `jsonschema` against its own metaschema).
"""

from __future__ import annotations

import json
import re

import jsonschema

from app.engine.types import TOOL_CHOICES

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # OpenAI's rule for a function's name
# PaneSpec.parallel_tool_calls as the window says it: None is not sent, so the backend's own default applies
PARALLEL_LABELS = {None: "default", True: "on", False: "off"}


class ToolsError(ValueError):
    """The tools cannot be used; the message names the tool (by number and name) and the field."""


def parse_tools(text: str, checked: bool = True):
    """The tools in `text` (JSON), checked (else as written); "" or blank is no tools. Raises ToolsError."""
    if not text.strip():
        return []
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolsError(f"tools: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    return check_tools(value) if checked else value


def check_tools(value) -> list[dict]:
    """`value` as a list of checked function definitions (a copy); raises ToolsError saying what is wrong."""
    if not isinstance(value, list):
        raise ToolsError(f"tools: must be a JSON list of function definitions, got {type(value).__name__}")
    seen: dict[str, int] = {}
    for i, tool in enumerate(value, 1):
        where = f"tool {i}"
        if not isinstance(tool, dict):
            raise ToolsError(f"{where}: must be an object {{\"type\": \"function\", \"function\": {{...}}}}")
        if tool.get("type") != "function":
            raise ToolsError(f"{where}: \"type\" must be \"function\", got {tool.get('type')!r}")
        fn = tool.get("function")
        if not isinstance(fn, dict):
            raise ToolsError(f"{where}: \"function\" must be an object with name and parameters")
        name = fn.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ToolsError(f"{where}: function.name must be 1-64 letters, digits, _ . or -, got {name!r}")
        where = f"tool {i} ({name})"
        if name in seen:
            raise ToolsError(f"{where}: the name {name!r} is also tool {seen[name]}'s; names must be unique")
        seen[name] = i
        if "description" in fn and not isinstance(fn["description"], str):
            raise ToolsError(f"{where}: function.description must be a string")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(params, dict):
            raise ToolsError(f"{where}: function.parameters must be a JSON Schema object")
        try:
            jsonschema.validators.validator_for(params).check_schema(params)
        except jsonschema.SchemaError as exc:
            at = "/".join(str(p) for p in exc.path)
            raise ToolsError(f"{where}: function.parameters is not a valid JSON Schema"
                             f"{f' (at {at})' if at else ''}: {exc.message}") from exc
    return json.loads(json.dumps(value))


def check_tool_choice(choice: str, tools: list[dict]) -> str:
    """`choice` if it fits `tools` (auto, none, required, or one tool's name); raises ToolsError."""
    names = [t["function"]["name"] for t in tools]
    if choice in TOOL_CHOICES and (choice != "required" or tools):
        return choice
    if choice == "required":
        raise ToolsError("tool_choice: \"required\" needs at least one tool")
    if choice not in names:
        listed = ", ".join(names) or "no tools are defined"
        raise ToolsError(f"tool_choice: {choice!r} is not auto, none, required or a tool's name ({listed})")
    return choice


def turn_choice(choice: str, call_first: bool, turns: list[dict]) -> tuple[str, bool]:
    """(tool_choice, call first) for the turn that follows `turns`. The pane's choice applies to the turn the user
    asked for; the turn after tool results (the model goes on once its calls are answered) uses "auto", so it may
    answer with what the tools returned instead of being forced into another call, round after round (as agent
    loops reset a required tool choice after a call, e.g. the OpenAI Agents SDK's `reset_tool_choice`). `none`
    stays none."""
    if turns and turns[-1]["role"] == "tool" and choice != "none":
        return "auto", False
    return choice, call_first


def request_fields(text: str, choice: str, parallel: bool | None, call_first: bool = False,
                   extra: list[dict] | tuple[dict, ...] = ()) -> dict:
    """GenerationRequest fields for a pane's tools ({} for none); `extra`: definitions offered beside them (an MCP
    server's tools, app/session/mcp_tools.py); `call_first` adds `tool_call_first` (the engine applies it with
    required or one function); raises ToolsError."""
    tools = parse_tools(text) + list(extra)
    if not tools:
        if choice not in ("auto", "none"):
            raise ToolsError(f"tool_choice: {choice!r} needs tools, and the pane has none")
        return {}
    fields = {"tools": tuple(tools), "tool_choice": check_tool_choice(choice, tools), "parallel_tool_calls": parallel}
    return {**fields, "tool_call_first": True} if call_first else fields


def tool_names(tools: list[dict]) -> list[str]:
    return [t["function"]["name"] for t in tools]
