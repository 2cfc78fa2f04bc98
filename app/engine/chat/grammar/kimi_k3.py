"""Kimi K3's tool grammars (common/parsers/kimi-k3.cpp, as its PEG parser becomes GBNF: common/peg-parser.cpp
`build_grammar`), in the markers of app/engine/chat/parse/kimi_k3.py.

- `kimi_k3_call`: the handler's trigger rule, llama-server's lazy ("auto") grammar from `<|open|>tools<|sep|>`:
  one or more calls (the handler has no single-call mode), each `<|open|>call tool="NAME"` any attributes
  `<|sep|>`, then its arguments in any order, repeated, each `<|open|>argument key="KEY"` any attributes `<|sep|>`
  and any text up to `<|close|>argument<|sep|>` (the handler's value is `until`, typed only when parsed), then
  `<|close|>tools<|sep|>`, the message's end markers optional.
- `kimi_k3_root`: llama-server's required grammar after its generation prompt (which opens the think section):
  the thinking, the response section, the calls, each marker as optional as the parser has it.
- `kimi_k3_first`: Chorus's call-first grammar (`tool_call_first`): the think section closed empty, then calls
  whose attributes are the template's
  (`index="N"`, `type="T"`) and whose arguments follow the schema as in Chorus's other tagged grammars
  (build.tagged_params: required ones first, each optional one at most once, strings with a maxLength on
  one line), so that even a small model writes a call that validates.
"""

from __future__ import annotations

from app.engine.chat.grammar.build import Builder
from app.engine.chat.grammar.text import lit, until, until_any
from app.engine.chat.parse.kimi_k3 import (
    ARG_END,
    ARG_START,
    CALL_END,
    CALL_START,
    EOM,
    MSG_END,
    RESP_END,
    RESP_START,
    SEP,
    THINK_END,
    TOOLS_END,
    TOOLS_START,
)

# the template's xtml_type of a value, by its schema type
_XTML = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "object": "object",
         "array": "array", "null": "null"}


def _add(b: Builder, rules: list[str]) -> None:
    b.rules.update(r.split(" ::= ", 1) for r in rules)


def _section(tool: str) -> str:
    return f"{lit(TOOLS_START)} {tool}+ {lit(TOOLS_END)} {lit(MSG_END)}? {lit(EOM)}?"


def kimi_k3_call(b: Builder, parallel: bool) -> str:
    """The handler's trigger rule `tool-call` (one or more calls whatever `parallel` says, as the handler)."""
    _add(b, until("kimi-k3-attrs", SEP))
    _add(b, until("kimi-k3-value", ARG_END))

    def tool(n: str, p: dict) -> str:
        keys = [b.rule(f"kimi-k3-arg-{n}-{k}", f'{lit(ARG_START + k + chr(34))} kimi-k3-attrs {lit(SEP)} '
                                                f'kimi-k3-value {lit(ARG_END)}') for k in p.get("properties") or {}]
        args = f" ({' | '.join(keys)})*" if keys else ""
        return f'{lit(CALL_START + n + chr(34))} kimi-k3-attrs {lit(SEP)}{args} {lit(CALL_END)}'
    return b.rule("tool-call", _section(b.each(tool)))


def kimi_k3_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """After `<|open|>think<|sep|>`: thinking up to its closer or the response opener, the closer optional, the
    response section (its markers optional) up to the calls, the calls, the message's end markers optional."""
    _add(b, until_any("kimi-k3-thinking", (THINK_END, RESP_START)))
    _add(b, until_any("kimi-k3-response", (RESP_END, TOOLS_START, MSG_END)))
    call = kimi_k3_call(b, parallel)
    return (f"kimi-k3-thinking {lit(THINK_END)}? {lit(RESP_START)}? kimi-k3-response {lit(RESP_END)}? {call} "
            f"{lit(MSG_END)}? {lit(EOM)}?")


def _value(b: Builder, n: str, k: str, schema: dict) -> str:
    kind = schema.get("type") if isinstance(schema.get("type"), str) else "string"
    if isinstance(schema.get("enum"), list) and all(isinstance(v, str) for v in schema["enum"]):
        return "(" + " | ".join(lit(v) for v in schema["enum"]) + ")"
    if kind == "string" and isinstance(schema.get("maxLength"), int):
        return f"[^<\\n]{{{schema.get('minLength', 0)},{schema['maxLength']}}}"
    if kind == "string":
        _add(b, until("kimi-k3-value", ARG_END))
        return "kimi-k3-value"
    return b.schema(schema, f"tool-{n}-arg-{k}-schema")


def kimi_k3_first(b: Builder, parallel: bool) -> str:
    """Chorus's call-first grammar: `<|close|>think<|sep|><|open|>tools<|sep|>`, the calls (one, or one or more
    with `parallel`) in the template's own attributes, `<|close|>tools<|sep|>` (the optional sections left out:
    a model without these markers in its vocabulary writes each in several tokens)."""
    def tool(n: str, p: dict) -> str:
        props = p.get("properties") or {}
        required = [k for k in props if k in (p.get("required") or ())]

        def arg(k: str) -> str:
            schema = props[k] if isinstance(props[k], dict) else {}
            xtml = _XTML.get(schema.get("type") if isinstance(schema.get("type"), str) else "string", "string")
            head = f'{ARG_START}{k}" type="{xtml}"{SEP}'
            return b.rule(f"tool-{n}-arg-{k}", f"{lit(head)} {_value(b, n, k, schema)} {lit(ARG_END)}")
        args = [arg(k) for k in required] + [f"{arg(k)}?" for k in props if k not in required]
        opener = [lit(CALL_START + n + '" index="'), "[1-9]", lit('"' + SEP)]
        return " ".join([*opener, *args, lit(CALL_END)])
    one = b.each(tool)
    calls = f"{one}+" if parallel else one
    return f"{lit(THINK_END + TOOLS_START)} {calls} {lit(TOOLS_END)}"
