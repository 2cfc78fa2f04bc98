"""MiniCPM5's tool grammar (common/parsers/minicpm5.cpp, as its PEG parser becomes GBNF): a call is
`<function name="NAME">` space, its parameters (each followed by `space`), space, `</function>`; a parameter is
`<param name="KEY">` and its value: where its schema may be a string, `<![CDATA[` text through `]]>` then
`</param>`, or text through `</param>`; else JSON of its schema, then `</param>`. One call, or with parallel calls
one or more, each followed by `space`.

llama-server's grammar (`server`: its lazy grammar once `<function` is written, and its required one after the
generation prompt) takes a tool's parameters any number of times in any order, as its parser does. Chorus's
call-first grammar (`tool_call_first`) takes the required ones in order, then each optional one at most once, a
string enum as one of its values and a string with a maxLength as that many characters on one line (as
build.tagged_params), so that a small model writes arguments that validate."""

from __future__ import annotations

from app.engine.chat.grammar.build import Builder
from app.engine.chat.grammar.text import lit, through, until, until_any
from app.engine.chat.parse.minicpm5 import CDATA, CDATA_END, CLOSE, KEY_END, NAME_END, OPEN, PARAM, PARAM_END
from app.engine.chat.parse.minimax_m3 import may_be_string

TRIGGER = "<function"  # the handler's grammar trigger, where its content ends


def _value(b: Builder, schema: dict, rule: str, strict: bool) -> str:
    enum = schema.get("enum")
    if strict and isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum):
        return "(" + " | ".join(lit(v) for v in enum) + f") {lit(PARAM_END)}"
    if may_be_string(schema):
        if strict and isinstance(schema.get("maxLength"), int):
            return f"[^<\\n]{{{schema.get('minLength', 0)},{schema['maxLength']}}} {lit(PARAM_END)}"
        b.rules.update(r.split(" ::= ", 1) for r in through("cdata-text", CDATA_END))
        b.rules.update(r.split(" ::= ", 1) for r in through("param-text", PARAM_END))
        return f"({lit(CDATA)} cdata-text {lit(PARAM_END)} | param-text)"
    return f"{b.schema(schema, rule + '-schema')} {lit(PARAM_END)}"


def _params(b: Builder, n: str, params: dict, strict: bool) -> str:
    props = params.get("properties") or {}

    def arg(k: str) -> str:
        schema, rule = props[k] if isinstance(props[k], dict) else {}, f"tool-{n}-arg-{k}"
        return b.rule(rule, f"{lit(PARAM + k + KEY_END)} {_value(b, schema, rule, strict)}")
    if not props:
        return ""
    if not strict:
        return "((" + " | ".join(arg(k) for k in props) + ") space)*"
    required = [k for k in props if k in (params.get("required") or ())]
    return " ".join([f"{arg(k)} space" for k in required] + [f"({arg(k)} space)?" for k in props if k not in required])


def minicpm5_call(b: Builder, parallel: bool, server: bool = False) -> str:
    """The trigger rule `tool-call`: calls, each followed by `space` (`server`: llama-server's parameters)."""
    tool = b.each(lambda n, p: f"{lit(OPEN + n + NAME_END)} space {_params(b, n, p, not server)} space {lit(CLOSE)}")
    return b.rule("tool-call", f"({tool} space)+" if parallel else f"{tool} space")


def minicpm5_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """llama-server's required grammar after its generation prompt: with the prompt's `<think>` open, the
    thinking up to `</think>`; then text up to `<function`, then the calls."""
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", (TRIGGER,)))
    head = "space "
    if thinking:
        b.rules.update(r.split(" ::= ", 1) for r in until("thinking", "</think>"))
        head = 'thinking "</think>" space '
    return f"{head}lead-text {minicpm5_call(b, parallel, server=True)}"
