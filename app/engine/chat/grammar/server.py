"""llama-server's own shapes of tool_choice-required grammars (common/chat-peg-parser.cpp,
common/chat-auto-parser-generator.cpp, common/parsers/*.cpp), for the formats whose required grammar Chorus
builds as llama-server does (docs/tools.md): `SERVER_SHAPES` by format, and the three formats with a parser of
their own (Kimi K2, the Qwen3-Coder family, Ministral 3)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from app.engine.chat.grammar.build import (
    CALL_ID,
    DS_CALL,
    DS_END,
    DS_SECTION,
    DS_SEP,
    MISTRAL_ID,
    Builder,
    calls,
    json_object,
    schema_rule,
)
from app.engine.chat.grammar.text import lit, through, until_any
from app.engine.chat.parse.formats import HY3, SOLAR_OPEN


def _server_json(end: str, array: bool, per_call: bool, obj: Callable[[Builder, str, dict], str] | None = None,
                 **keys) -> Callable[[Builder, bool, str], str]:
    """llama-server's shape of JSON calls (`standard_json_tools`, common/chat-peg-parser.cpp): START space
    ("[" space)? calls (space "," space between them when parallel) (space "]")? space END, and for a marker per
    call (Hermes, Nemotron v2) one or more such calls, each followed by `space`, whatever `parallel` says. `obj`:
    another call object than `json_object`'s."""
    def build(b: Builder, parallel: bool, start: str) -> str:
        one = b.each(lambda n, p: obj(b, n, p) if obj else json_object(b, n, p, **keys))
        inner = calls(one, parallel, 'space "," space')
        if array:
            inner = f'"[" space {inner} space "]"'
        b.rule("tool-call", f"{lit(start)} space {inner} space {lit(end)}")
        return b.rule("tool-calls", "(tool-call space)+") if per_call else "tool-call"
    return build


def _server_tagged(call: tuple[str, str], name: tuple[str, str, str], key: tuple[str, str], value: tuple[str, str],
                   section: bool = False, outer: tuple[str, str] = ("", ""), sep: str = ""
                   ) -> Callable[[Builder, bool, str], str]:
    """llama-server's shape of tagged calls (`build_tool_parser_tag_tagged`, common/chat-auto-parser-generator.cpp):
    CALL0 space (name[0] NAME name[1] space (SEP space)? ARGS (space name[2])?) space CALL1, ARGS the required
    parameters in order (`space` between), then `space` and any optional one, any number of times; a string
    parameter's value runs up to and including its closing tag, another is JSON of its schema and the tag. With
    `section`, the markers wrap all calls (", " between them), else each call (`space` between, and after), and
    with `outer` these calls are inside OUTER0 space ... space OUTER1 space (Hy3's section). `sep`: the analysis'
    arguments separator (`func_args_separator`)."""
    def build(b: Builder, parallel: bool, start: str) -> str:
        b.rules.update(r.split(" ::= ", 1) for r in through("tag-arg-string", value[1]))

        def tool(n: str, params: dict) -> str:
            props = params.get("properties") or {}
            required = [k for k in props if k in (params.get("required") or ())]

            def arg(k: str) -> str:
                schema = props[k] if isinstance(props[k], dict) else {}
                kinds = schema.get("type", "string")
                may_be_string = not schema or "string" in (kinds if isinstance(kinds, list) else [kinds])
                val = ("tag-arg-string" if may_be_string
                       else f"{b.schema(schema, f'tool-{n}-arg-{k}-schema')} {lit(value[1])}")
                return b.rule(f"tool-{n}-arg-{k}", f"{lit(key[0] + k + key[1])} {lit(value[0])} {val}")
            args = " space ".join(arg(k) for k in required)
            optional = [arg(k) for k in props if k not in required]
            if optional:
                args = f"{args} (space ({' | '.join(optional)}))*".strip()
            close = f" space {lit(name[2])}" if name[2] else ""
            after_sep = f" {lit(sep)} space" if sep else ""
            return f"{lit(name[0] + n + name[1])} space{after_sep} {args or chr(34) * 2}{close}"
        tools = b.each(tool)
        if section:
            inner = f'{tools} ({lit(", ")} {tools})*' if parallel else tools
            return b.rule("tool-call", f"{lit(call[0])} space {inner} space {lit(call[1])}")
        one = f"{lit(call[0])} space {tools} space {lit(call[1])}"
        rule = b.rule("tool-call", f"{one} (space {one})* space" if parallel else f"{one} space")
        if outer[0]:
            return b.rule("tool-calls", f"{lit(outer[0])} space {rule} space {lit(outer[1])} space")
        return rule
    return build


def _server_json_tag(call: tuple[str, str], section: tuple[str, str], sep: str
                     ) -> Callable[[Builder, bool, str], str]:
    """llama-server's shape of NAME + JSON arguments calls (`build_tool_parser_tag_json`): per call CALL0 (NAME
    SEP space JSON) CALL1, `space` between calls, inside SECTION0 space ... space SECTION1 when there is one."""
    def build(b: Builder, parallel: bool, start: str) -> str:
        one = f"{lit(call[0])} {b.each(lambda n, p: f'{lit(n + sep)} space {schema_rule(b, n, p)}')} {lit(call[1])}"
        b.rule("tool-call", f"{one} (space {one})*" if parallel else one)
        if not section[0]:
            return "tool-call"
        return b.rule("tool-calls", f"{lit(section[0])} space tool-call space {lit(section[1])}")
    return build


def _llama3_object(b: Builder, n: str, p: dict) -> str:
    """Llama 3.x's call object as llama-server writes its rule: an optional `"type": "function"` first."""
    kind = f'{lit(json.dumps("type"))} space ":" space {lit(json.dumps("function"))} space "," space'
    return json_object(b, n, p, args_key="parameters", id_field=f"({kind})? ")


def name_key_object(b: Builder, n: str, p: dict) -> str:
    """Apertus' call object, the function's name as its key (`build_json_tools_function_is_key`): {"NAME": {...}}."""
    return f'"{{" space {lit(json.dumps(n))} space ":" space {schema_rule(b, n, p)} space "}}"'


# Formats whose required grammar here is llama-server's own shape (the others keep Chorus's, docs/tools.md).
SERVER_SHAPES: dict[str, Callable[[Builder, bool, str], str]] = {
    "hermes": _server_json("</tool_call>", False, True),
    "llama-3.x": lambda b, parallel, start: b.rule("tool-call", '"" space ' + calls(
        b.each(lambda n, p: _llama3_object(b, n, p)), parallel, 'space "," space') + ' space ""'),
    "mistral-nemo": _server_json("", True, False, id_tail=f' space "," space "\\"id\\"" space ":" space {MISTRAL_ID}'),
    "command-r7b": _server_json("<|END_ACTION|>", True, False, name_key="tool_name", args_key="parameters",
                                id_field=f'"\\"tool_call_id\\"" space ":" space {CALL_ID} space "," space '),
    "functionary-v3.1-llama-3.1": _server_json_tag(("<function=", "</function>"), ("", ""), ">"),
    "deepseek-v3.1": _server_json_tag((DS_CALL, DS_END), DS_SECTION, DS_SEP),
    # the name prefix holds the analysis' probe id, call00001 (parse/formats.py)
    "solar-open": _server_json_tag((SOLAR_OPEN.call[0] + SOLAR_OPEN.name_prefix, SOLAR_OPEN.call[1]),
                                   SOLAR_OPEN.section, SOLAR_OPEN.name_suffix),
    "glm-4.5": _server_tagged(("<tool_call>", "</tool_call>"), ("", "\n", ""), ("<arg_key>", "</arg_key>\n"),
                              ("<arg_value>", "</arg_value>\n")),
    "seed-oss": _server_tagged(("<seed:tool_call>\n", "</seed:tool_call>"), ("<function=", ">\n", "</function>\n"),
                               ("<parameter=", ">"), ("", "</parameter>\n")),
    "minimax-m2": _server_tagged(("<minimax:tool_call>\n", "</minimax:tool_call>"), ("<invoke name=\"", "\">\n",
                                 "</invoke>\n"), ("<parameter name=\"", "\">"), ("", "</parameter>\n"), section=True),
    "hy3": _server_tagged((HY3.call[0], ""), ("", "", HY3.extra["close"]), HY3.param[:2],
                          (HY3.extra["value_prefix"], HY3.param[2]), outer=HY3.section, sep=HY3.name_suffix),
    "nemotron-v2": _server_json("</TOOLCALL>", True, True),
    "apriel": _server_json("</tool_calls>", True, False),
    "apriel-thinker": _server_json("</tool_calls>", True, False),
    "minimax-m1": _server_json("</tool_calls>", False, False),
    "firefunction-v2": _server_json("", True, False),
    "apertus": _server_json("<|tools_suffix|>", True, False, obj=name_key_object),
    "gigachat-v3.1": _server_json("", False, False),
    "command-r-plus": _server_json("```", True, False, name_key="tool_name", args_key="parameters"),
}


def kimi_root(b: Builder, parallel: bool, thinking: bool) -> str:
    """common/parsers/kimi-k2.cpp's grammar after its generation prompt: a thinking block (its end optional),
    text up to either call marker, then `<|tool_calls_section_begin|>`? and the calls, end markers optional."""
    stops = ("<|tool_calls_section_begin|>", "<|tool_call_begin|>")
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", stops))
    b.rules.update(r.split(" ::= ", 1) for r in until_any("thinking", ("</think>", *stops)))
    tool = b.each(lambda n, p: f'{lit("functions." + n + ":")} [0-9]+ "<|tool_call_argument_begin|>" '
                               f'{schema_rule(b, n, p)} "<|tool_call_end|>"?')
    b.rule("tool-call", f'("<|tool_call_begin|>" {tool}){"+" if parallel else ""} "<|tool_calls_section_end|>"?')
    b.rule("tool-calls", '"<|tool_calls_section_begin|>"? tool-call')
    opening = "" if thinking else '"<think>" '
    return f'({opening}thinking "</think>"?)? lead-text tool-calls'


def qwen3_coder_root(b: Builder, parallel: bool, thinking: bool, thinks: bool) -> str:
    """common/parsers/qwen3-coder.cpp's grammar after its generation prompt (`thinks`: the template has
    `<think>`; without it, Qwen3-Coder's, a call may also start at `<function=NAME>`)."""
    names = [t["function"]["name"] for t in b.tools]
    stops = ("<tool_call>",) if thinks else ("<tool_call>", *(f"<function={n}>" for n in names))
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", stops))
    b.rules.update(r.split(" ::= ", 1) for r in through("xml-arg-string", "\n</parameter>\n"))
    close = lit("\n</parameter>\n")

    def body(n: str, params: dict) -> str:
        props = params.get("properties") or {}
        required = [k for k in props if k in (params.get("required") or ())]

        def arg(k: str) -> str:
            kinds = props[k].get("type", "string") if isinstance(props[k], dict) else "string"
            kinds = kinds if isinstance(kinds, list) else [kinds]
            value = ("xml-arg-string" if "string" in kinds or not props[k]
                     else f"{b.schema(props[k], f'tool-{n}-arg-{k}-schema')} {close}")
            return b.rule(f"tool-{n}-arg-{k}", f"{lit('<parameter=' + k + '>' + chr(10))} {value}")
        req = [arg(k) for k in required]
        orders = list(itertools.permutations(req)) if len(req) <= 3 else [tuple(req)]
        args = "(" + " | ".join(" ".join(o) for o in orders) + ")" if len(orders) > 1 else " ".join(req)
        optional = [arg(k) for k in props if k not in required]
        if optional:
            args = f"{args} ({' | '.join(optional)})*".strip()
        return f"{lit('<function=' + n + '>' + chr(10))} {args or chr(34) * 2} \"</function>\\n\""
    tool = b.each(body)
    b.rule("tool-call", f'"<tool_call>\\n" {tool} "</tool_call>" space')
    first = "tool-call"
    if not thinks:
        first = b.rule("tool-call-first", f'"<tool_call>\\n"? {tool} "</tool_call>" space')
    b.rule("tool-call-root", f"{first} tool-call*" if parallel else first)
    if thinks:
        b.rules.update(r.split(" ::= ", 1) for r in until_any("thinking", ("</think>", "<tool_call>")))
        opening = "" if thinking else '"<think>" space '
        return f'({opening}thinking ("</think>" | ""))? space lead-text space tool-call-root'
    return "space lead-text space tool-call-root"


def ministral_root(b: Builder, parallel: bool) -> str:
    """common/parsers/ministral3.cpp's grammar (Ministral 3, Devstral: no `[CALL_ID]`): a `[THINK]` block,
    text up to `[TOOL_CALLS]`, then `[TOOL_CALLS]NAME[ARGS]{...}` once, or more when parallel."""
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", ("[TOOL_CALLS]",)))
    b.rules.update(r.split(" ::= ", 1) for r in until_any("thinking", ("[/THINK]",)))
    tool = b.each(lambda n, p: f'{lit(n)} "[ARGS]" {schema_rule(b, n, p)}')
    b.rule("tool-call", f'("[TOOL_CALLS]" {tool}){"+" if parallel else ""}')
    return '("[THINK]" thinking "[/THINK]")? space lead-text space tool-call'
