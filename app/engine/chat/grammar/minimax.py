"""MiniMax-M3's tool grammar (common/parsers/minimax-m3.cpp, as its PEG parser becomes GBNF): every tag carries
the namespace token, a call is `NS<invoke name="NAME">` its parameters `NS</invoke>`, all inside
`NS<tool_call>` ... `NS</tool_call>`, and a parameter is `NS<KEY>` VALUE `NS</KEY>` where the value follows its
schema as the parser reads it (app/engine/chat/parse/minimax_m3.py): text up to the closing tag for a string,
nested elements for an object with properties, `NS<item>` elements for an array, JSON otherwise.

As in Chorus's other tagged grammars (build.tagged_params), optional parameters come at most once each, in
order (llama.cpp allows them in any order, repeated: a small model then repeats one forever), and a string with
a maxLength is that many characters on one line."""

from __future__ import annotations

import re

from app.engine.chat.grammar.build import Builder
from app.engine.chat.grammar.text import lit, through, until, until_any
from app.engine.chat.parse.minimax_m3 import NS, may_be_string

START, END = NS + "<tool_call>", NS + "</tool_call>"


def _value(b: Builder, schema: dict, rule: str, close: str) -> str:
    if isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        return "(" + " | ".join(lit(v) for v in schema["enum"]) + f") {lit(close)}"
    if may_be_string(schema):
        if isinstance(schema.get("maxLength"), int):
            return f"[^<\\n]{{{schema.get('minLength', 0)},{schema['maxLength']}}} {lit(close)}"
        name = re.sub(r"[^a-zA-Z0-9-]+", "-", f"{rule}-string")  # GBNF rule names (Builder.rule's)
        b.rules.update(r.split(" ::= ", 1) for r in through(name, close))
        return name
    union = schema.get("anyOf") or schema.get("oneOf")
    if union:
        return "(" + " | ".join(_value(b, s if isinstance(s, dict) else {}, f"{rule}-{i}", close)
                                for i, s in enumerate(union)) + ")"
    if schema.get("type") == "object" and schema.get("properties"):
        return f"{_members(b, schema, rule)} space {lit(close)}"
    if schema.get("type") == "array":
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        item = b.rule(f"{rule}-item", f"{lit(NS + '<item>')} {_value(b, items, rule + '-item', NS + '</item>')}")
        return f"(space {item})* space {lit(close)}"
    return f"{b.schema(schema, rule + '-schema')} {lit(close)}"


def _members(b: Builder, schema: dict, rule: str) -> str:
    """The required parameters in schema order, then each optional one at most once, in order."""
    props = schema.get("properties") or {}
    required = [k for k in props if k in (schema.get("required") or ())]

    def element(k: str) -> str:
        value = _value(b, props[k] if isinstance(props[k], dict) else {}, f"{rule}-{k}", f"{NS}</{k}>")
        return b.rule(f"{rule}-{k}", f"{lit(NS + '<' + k + '>')} {value}")
    seq = [element(k) for k in required] + [f"(space {element(k)})?" for k in props if k not in required]
    return " space ".join(seq[:len(required)]) + " " + " ".join(seq[len(required):]) if seq else '""'


def minimax_m3_call(b: Builder, parallel: bool) -> str:
    """The trigger rule: `NS<tool_call>` space invoke (space invoke)* space `NS</tool_call>`."""
    tool = b.each(lambda n, p: f'{lit(NS + "<invoke name=" + chr(34) + n + chr(34) + ">")} space '
                               f'{_members(b, p, "tool-" + n + "-arg")} space {lit(NS + "</invoke>")}')
    more = f" (space {tool})*" if parallel else ""
    return b.rule("tool-call", f"{lit(START)} space {tool}{more} space {lit(END)}")


def minimax_m3_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """After its generation prompt: a thinking block (or a bare `</mm:think>`), text up to the calls, the calls."""
    b.rules.update(r.split(" ::= ", 1) for r in until("thinking", "</mm:think>"))
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", (START,)))
    return f'("<mm:think>" space thinking "</mm:think>" | "</mm:think>")? lead-text {minimax_m3_call(b, parallel)}'
