"""A pane's output format: free text, any JSON, JSON matching a schema, or a GBNF grammar.

The format becomes request fields (the engine constrains decoding with llama.cpp's grammar sampler), is checked
before a run (so a broken schema is the pane's error, never a request's), and the finished output is checked
against it for the pane's status line: parsed and validated against the schema (JSON, always), said to be cut
off when it did not finish, and never claimed to match a grammar that nobody re-checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import jsonschema

from app.backends.server_params import FORMAT_KEYS
from app.engine import Completion
from app.engine.sampling.grammar import GrammarError, check_request

KINDS = {"text": "Free text", "json": "JSON", "schema": "JSON schema", "grammar": "GBNF grammar"}


def format_applied(completion: Completion) -> bool:
    """Whether the backend applied the request's output format (a server may ignore it)."""
    return not set(FORMAT_KEYS) & set(completion.unapplied)


def _not_json(constant: str):
    raise ValueError(f"{constant} is not a JSON value")


@dataclass(frozen=True)
class OutputFormat:
    kind: str = "text"
    text: str = ""  # the schema (JSON) or the grammar (GBNF); unused for "text" and "json"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"output format must be one of {', '.join(KINDS)}, got {self.kind!r}")

    @property
    def label(self) -> str:
        return KINDS[self.kind]

    def schema(self) -> dict:
        """The JSON schema this format asks for ({} = any JSON); raises ValueError saying what is wrong."""
        if self.kind == "json":
            return {}
        try:
            schema = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"the schema is not JSON: {exc}") from exc
        if not isinstance(schema, dict):
            raise ValueError("the schema must be a JSON object")
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"the schema is not a valid JSON schema: {exc.message}") from exc
        return schema

    def request_fields(self) -> dict:
        """GenerationRequest fields for this format (raises ValueError like `schema()`)."""
        if self.kind == "text":
            return {}
        if self.kind == "grammar":
            if not self.text.strip():
                raise ValueError("the grammar is empty")
            return {"grammar": self.text}
        return {"json_schema": self.schema()}

    def problem(self, compile_grammar: Callable[[str | None, dict | None], str | None] | None = None) -> str | None:
        """Why this format cannot be used, or None. `compile_grammar(grammar, json_schema)` (the loaded model's
        parser, `Engine.check_grammar`) also catches GBNF syntax errors."""
        try:
            fields = self.request_fields()
            check_request(fields.get("grammar"), fields.get("json_schema"))
        except (ValueError, GrammarError) as exc:
            return str(exc)
        if compile_grammar is not None and fields:
            return compile_grammar(fields.get("grammar"), fields.get("json_schema"))
        return None

    def check_output(self, text: str, finish_reason: str = "stop", applied: bool = True) -> str:
        """An honest verdict on a finished output ("" for free text): JSON is parsed and validated against the
        schema whatever the backend did; a reply cut off (finish "length" or "cancelled") is said to be
        incomplete; a GBNF match is never claimed, only that the backend constrained a reply that finished
        "stop". `applied`: whether the backend applied the format (False when a server ignores it,
        `format_applied(completion)`)."""
        if self.kind == "text":
            return ""
        if finish_reason == "error":
            return "not checked: the run failed"
        cut = f"cut off (finish: {finish_reason}): not complete" if finish_reason in ("length", "cancelled") else ""
        ignored = "" if applied else f"; the backend did not apply the {self.label.lower()}"
        if self.kind == "grammar":
            if cut:
                return f"✗ {cut}{ignored}"
            return ("constrained by the grammar; not re-checked" if applied
                    else "✗ not constrained: the backend did not apply the grammar; not checked")
        ok, verdict = self._check_json(text)
        if not ok and cut:
            return f"✗ {cut} ({verdict}){ignored}"
        return f"{'✓' if ok else '✗'} {verdict}{ignored}"

    def _check_json(self, text: str) -> tuple[bool, str]:
        try:
            value = json.loads(text, parse_constant=_not_json)
        except (json.JSONDecodeError, ValueError) as exc:
            where = f" ({exc.msg} at character {exc.pos})" if isinstance(exc, json.JSONDecodeError) else f" ({exc})"
            return False, f"not valid JSON{where}"
        if self.kind == "json":
            return True, "valid JSON"
        try:
            jsonschema.validate(value, self.schema())
        except jsonschema.ValidationError as exc:
            return False, f"JSON, but not valid against the schema: {exc.message}"
        except ValueError as exc:
            return False, str(exc)
        return True, "valid JSON, matches the schema"

    @classmethod
    def of_request(cls, grammar: str | None, json_schema: dict | None) -> OutputFormat:
        """The format a request's fields ask for (the inverse of `request_fields`)."""
        if grammar is not None:
            return cls("grammar", grammar)
        if json_schema is None:
            return cls()
        return cls("json") if json_schema == {} else cls("schema", json.dumps(json_schema))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "text": self.text}

    @classmethod
    def from_dict(cls, data) -> OutputFormat:
        data = data or {}
        return cls(kind=str(data.get("kind", "text")), text=str(data.get("text", "")))
