"""DeepSeek V3.2 / V4's tool grammar (common/parsers/deepseek.cpp, as its PEG parser becomes GBNF): the calls'
block (`<｜DSML｜function_calls>`, V4's `<｜DSML｜tool_calls>`) holds `space`-separated invokes,

    <｜DSML｜invoke name="NAME">\\n  required parameters, `space` between  (space optional)*  space </｜DSML｜invoke>

and a parameter is `<｜DSML｜parameter name="K" string="true">` text up to `</｜DSML｜parameter>` when its schema may
be a string (`may_be_string`), else `string="false">` JSON of its schema. The trigger rule (`tool-call`) is both
llama-server's lazy ("auto") grammar once `<｜DSML｜function_calls>` appears and Chorus's call-first grammar.

llama-server's required grammar starts with the generation prompt (`<｜Assistant｜>` and `<think>`, `</think>` or
`<think></think>`), which it feeds through the grammar first: the reasoning block that ends at the calls, the one
that ends at `</think>`, and the text before the calls (its `negate(<think>)` is lost in GBNF, so that text may
take the prompt's `<think>` too) leave, together, any text without the block's start, then the calls.

As in Chorus's other tagged grammars (build.tagged_params), optional parameters come at most once each, in
order (llama.cpp allows them in any order, repeated), a string enum is one of its values and a string with a
maxLength that many characters on one line: every call allowed reads the same to llama.cpp's parser."""

from __future__ import annotations

from app.engine.chat.grammar.build import Builder
from app.engine.chat.grammar.text import lit, until, until_any
from app.engine.chat.parse import dsml
from app.engine.chat.parse.minimax_m3 import may_be_string

STRING = "dsml-arg-string"  # text up to </｜DSML｜parameter> (llama.cpp's until)


def _arg(b: Builder, name: str, key: str, schema: dict) -> str:
    """Rule `tool-NAME-arg-KEY`: the parameter's tag, its value as llama.cpp's parser reads it, the end tag."""
    is_string = may_be_string(schema)
    head = lit(f'{dsml.PARAM_START}{key}" string="{"true" if is_string else "false"}">')
    if isinstance(schema.get("enum"), list) and schema["enum"] and all(isinstance(v, str) for v in schema["enum"]):
        value = "(" + " | ".join(lit(v) for v in schema["enum"]) + ")"
    elif is_string and isinstance(schema.get("maxLength"), int):
        value = f"[^<\\n]{{{schema.get('minLength', 0)},{schema['maxLength']}}}"
    elif is_string:
        if STRING not in b.rules:
            b.rules.update(r.split(" ::= ", 1) for r in until(STRING, dsml.PARAM_END))
        value = STRING
    else:
        value = b.schema(schema, f"tool-{name}-arg-{key}-schema")
    return b.rule(f"tool-{name}-arg-{key}", f"{head} {value} {lit(dsml.PARAM_END)}")


def _invoke(b: Builder, name: str, params: dict) -> str:
    props = {k: v if isinstance(v, dict) else {} for k, v in (params.get("properties") or {}).items()}
    required = [k for k in props if k in (params.get("required") or ())]
    args = " space ".join(_arg(b, name, k, props[k]) for k in required)
    args += "".join(f" (space {_arg(b, name, k, props[k])})?" for k in props if k not in required)
    return f"{lit(dsml.INVOKE_START + name + dsml.NAME_END)} {args} space {lit(dsml.INVOKE_END)}"


def call_rule(block: str):
    """The trigger rule builder for the block named `block` (`function_calls` or `tool_calls`)."""
    start, end = dsml.block(block)

    def build(b: Builder, parallel: bool) -> str:
        tool = b.each(lambda n, p: _invoke(b, n, p))
        more = f" (space {tool})*" if parallel else ""
        return b.rule("tool-call", f"{lit(start)} space {tool}{more} space {lit(end)}")
    return build


def root_rule(block: str):
    """llama-server's required grammar after the generation prompt: text without the block's start, the calls."""
    start = dsml.block(block)[0]
    calls = call_rule(block)

    def build(b: Builder, parallel: bool, thinking: bool, think) -> str:
        b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", (dsml.SEPARATOR + start, start)))
        return f"lead-text space {calls(b, parallel)}"
    return build


CALLS = {"deepseek-v3.2": (dsml.block("function_calls")[0], call_rule("function_calls")),
         "deepseek-v4": (dsml.block("tool_calls")[0], call_rule("tool_calls"))}
ROOTS = {"deepseek-v3.2": root_rule("function_calls"), "deepseek-v4": root_rule("tool_calls")}
