"""The pieces every tool-call grammar is built from: llama.cpp's JSON whitespace (`CurrentSpacing`), the rule
collector (`Builder`), a call object, parameters as tags, and the markers several formats share.

Invariant: one `Builder` holds one converter, so a schema rule shared by several tools is written once."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from llama_cpp.llama_grammar import SchemaConverter

from app.engine.gbnf_text import lit, until
from app.engine.sampling.grammar import GrammarError, closed_objects

SPACE_RULE = '| " " | "\\n"{1,2} [ \\t]{0,20}'  # common/json-schema-to-grammar.cpp's SPACE_RULE
_TRAILING = re.compile(r'(?:("[}\]]") )?(?<![\w-])space$')
CHAR_RULE = r'[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})'  # no raw control character, no `\/`
_TWICE = re.compile(r'(?<![\w-])space\s+space(?![\w-])')


class CurrentSpacing(SchemaConverter):
    """llama-cpp-python's converter with the whitespace of llama.cpp's current one: `space` is nothing, a blank,
    or one or two newlines and an indent; it follows `{`, `[`, `,`, `:` and a key, and precedes `}` and `]`,
    never a value (the older converter puts a blank after every value, so it allows `"Paris" ,`). A string's
    character is llama.cpp's current one too."""

    def __init__(self):
        super().__init__(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        self._rules["space"] = SPACE_RULE

    def _add_rule(self, name, rule):
        if name == "char":
            rule = CHAR_RULE
        rule = _TRAILING.sub(lambda m: f"space {m.group(1)}" if m.group(1) else "", rule).rstrip()
        rule = _TWICE.sub("space", rule)  # an empty object: `"{" space "}"`, one `space`, as llama.cpp's
        return super()._add_rule(name, rule)


class Builder:
    """Collects rules: the tools' JSON schemas (one converter, so shared rules are written once) and the
    format's own."""

    def __init__(self, tools: tuple[dict, ...]):
        self.tools = tools
        self.conv = CurrentSpacing()
        self.rules: dict[str, str] = {}
        self.stops: dict[str, str] = {}  # closing tag -> the rule of free text before it

    def schema(self, schema: dict, name: str) -> str:
        """The rule name of JSON text matching `schema`."""
        try:
            return self.conv.visit(closed_objects(schema), name)
        except (AssertionError, KeyError, TypeError, ValueError, RecursionError) as exc:
            raise GrammarError(f"the tools' parameters cannot become a grammar: {exc}") from exc

    def rule(self, name: str, body: str) -> str:
        name = re.sub(r"[^a-zA-Z0-9-]+", "-", name)
        self.rules[name] = body
        return name

    def each(self, make: Callable[[str, dict], str]) -> str:
        """`(tool-A | tool-B ...)`: one rule per tool, its body made by `make(name, parameters)`."""
        names = [self.rule(f"tool-{t['function']['name']}",
                           make(t["function"]["name"], t["function"].get("parameters") or {"type": "object"}))
                 for t in self.tools]
        return "(" + " | ".join(names) + ")"

    def text(self, root: str) -> str:
        body = "\n".join(f"{k} ::= {v}" for k, v in {"root": root, **self.rules}.items())
        return f"{body}\n{self.conv.format_grammar()}"


SP = '[ \\n]?'  # where llama-server allows any whitespace
COMMA = f'{SP} "," {SP}'


def json_object(b: Builder, name: str, params: dict, name_key: str = "name", args_key: str = "arguments",
                id_field: str = "", id_tail: str = "") -> str:
    """{"name": "NAME", "arguments": {...}} (keys per format), with an id field first or last if given."""
    schema = b.schema(params, f"tool-{name}-schema")
    head = f'"{{" space {id_field}' if id_field else '"{" space '
    return (f'{head}{lit(json.dumps(name_key))} space ":" space {lit(json.dumps(name))} space "," space '
            f'{lit(json.dumps(args_key))} space ":" space {schema}{id_tail} space "}}"')


def tagged_params(b: Builder, name: str, params: dict, key: tuple[str, str], value: tuple[str, str]) -> str:
    """Parameters as tags: required ones in definition order, then each optional one at most once, in order
    (llama.cpp allows them in any order, repeated: a small model then repeats one forever)."""
    props = params.get("properties") or {}
    required = [k for k in props if k in (params.get("required") or ())]
    optional = [k for k in props if k not in required]
    stop = value[1].rstrip("\n") or value[1]
    if stop not in b.stops:
        b.stops[stop] = f"xml-arg-string-{len(b.stops)}"
        b.rules.update(r.split(" ::= ", 1) for r in until(b.stops[stop], stop))

    def arg(k: str) -> str:
        schema = props[k] or {}
        kind = schema.get("type", "string")
        if isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
            val = "(" + " | ".join(lit(v) for v in schema["enum"]) + ")"  # one of its strings, as text
        elif kind == "string" and isinstance(schema.get("maxLength"), int):  # text on one line, no tag inside
            val = f"[^<\\n]{{{schema.get('minLength', 0)},{schema['maxLength']}}}"
        elif kind == "string" or (isinstance(kind, list) and "string" in kind):
            val = b.stops[stop]
        else:
            val = b.schema(schema, f"tool-{name}-arg-{k}-schema")
        return b.rule(f"tool-{name}-arg-{k}", f"{lit(key[0] + k + key[1])} {lit(value[0])} {val} {lit(value[1])}")

    seq = [arg(k) for k in required] + [f"{arg(k)}?" for k in optional]
    return " ".join(seq) or '""'


def calls(one: str, parallel: bool, sep: str = SP) -> str:
    return f"{one} ({sep} {one})*" if parallel else one


CALL_ID = '"\\"" [0-9]{1,4} "\\""'  # a call id the model makes up: digits, as a JSON string
MISTRAL_ID = '"\\"" [a-zA-Z0-9]{9} "\\""'  # Mistral's: nine letters and digits
NL = '"\\n"?'
DS_SEP, DS_CALL, DS_END = "<｜tool▁sep｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
DS_SECTION = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")


def schema_rule(b: Builder, n: str, p: dict) -> str:
    return b.schema(p, f"tool-{n}-schema")
