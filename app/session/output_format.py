"""A pane's output format: free text, any JSON, JSON matching a schema, or a GBNF grammar.

The format becomes request fields (the engine constrains decoding with llama.cpp's grammar sampler), is checked
before a run (so a broken schema is the pane's error, never a request's), and the finished output is checked
against it (parsed, and validated against the schema) for the pane's status line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import jsonschema

from app.engine.grammar import GrammarError, check_request

KINDS = {"text": "Free text", "json": "JSON", "schema": "JSON schema", "grammar": "GBNF grammar"}


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

    def check_output(self, text: str) -> str:
        """A short verdict on a finished output ("" for free text)."""
        if self.kind in ("text", "grammar"):
            return "" if self.kind == "text" else "matches the grammar (constrained)"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            return f"✗ not valid JSON ({exc.msg} at character {exc.pos})"
        if self.kind == "json":
            return "✓ valid JSON"
        try:
            jsonschema.validate(value, self.schema())
        except jsonschema.ValidationError as exc:
            return f"✗ JSON, but not valid against the schema: {exc.message}"
        except ValueError as exc:
            return f"✗ {exc}"
        return "✓ valid JSON, matches the schema"

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
