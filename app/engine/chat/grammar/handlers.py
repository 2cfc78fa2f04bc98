"""The tool grammars of the formats llama.cpp parses with a handler of its own (common/parsers/gpt-oss.cpp,
lfm2.cpp, gemma4.cpp, gigachat-v3.cpp, cohere2moe.cpp; minimax-m3.cpp's in minimax.py, deepseek.cpp's
in dsml.py, minicpm5.cpp's in minicpm5.py), spelled as their
PEG parsers become GBNF (common/peg-parser.cpp `build_grammar`).

Per format: `CALLS[name](b, parallel)` is the handler's trigger rule (`tool-call`), which is both Chorus's
call-first grammar and llama-server's lazy ("auto") grammar once triggered; `ROOTS[name](b, parallel, thinking,
think)` is llama-server's required grammar after its generation prompt (which llama-server feeds through the
grammar first, common/sampling.cpp). `TRIGGERS` holds the lazy triggers as llama-server passes them to
`llama_sampler_init_grammar_lazy_patterns` (a word trigger escaped as a regular expression)."""

from __future__ import annotations

import re
from collections.abc import Callable

from app.engine.chat.grammar.build import Builder, json_object, schema_rule
from app.engine.chat.grammar.dsml import CALLS as DSML_CALLS
from app.engine.chat.grammar.dsml import ROOTS as DSML_ROOTS
from app.engine.chat.grammar.kimi_k3 import kimi_k3_root
from app.engine.chat.grammar.ling_muse import MUSE_TRIGGER, ling3_call, ling3_root, muse_call, muse_root
from app.engine.chat.grammar.minicpm5 import TRIGGER as MINICPM5_TRIGGER
from app.engine.chat.grammar.minicpm5 import minicpm5_call, minicpm5_root
from app.engine.chat.grammar.minimax import START as MINIMAX_M3_START
from app.engine.chat.grammar.minimax import minimax_m3_call, minimax_m3_root
from app.engine.chat.grammar.server import SERVER_SHAPES
from app.engine.chat.grammar.text import lit, until, until_any

# llama.cpp's fixed rules (chat-peg-parser.cpp: python_or_json_value, string_content, json literals; gemma4.cpp)
_STRING = '( [^{q}\\\\] | "\\\\" ( [{q}\\\\/ bfnrt] | "u" [0-9a-fA-F]{{4}} ) )*'
DQ = f'"\\"" {_STRING.format(q=chr(34))} "\\""'
SQ = f'"\'" {_STRING.format(q=chr(39))} "\'"'
JSON_LEAVES = {
    "json-bool": '"true" | "false"',
    "json-null": '"null"',
    "json-number": '"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? (("e" | "E") [+-]? [0-9]+)?',
}
PYTHON_RULES = {
    **JSON_LEAVES,
    "double-quoted-string": DQ,
    "single-quoted-string": SQ,
    "python-string": "double-quoted-string | single-quoted-string",
    "python-bool": '"True" | "False"',
    "python-none": '"None"',
    "python-or-json-array": '"[" space ("]" | python-or-json-value ("," space python-or-json-value)* space "]") space',
    "python-or-json-dict": '"{" space ("}" | python-string space ":" space python-or-json-value (space "," space '
                           'python-string space ":" space python-or-json-value)* space "}") space',
    "python-or-json-value": "python-or-json-dict | python-or-json-array | python-string | json-number | "
                            "python-bool | python-none | json-bool | json-null",
}
GEMMA4_RULES = {
    **JSON_LEAVES,
    "gemma4-array": '"[" space ("]" | gemma4-value ("," space gemma4-value)* space "]")',
    "gemma4-bool": "json-bool",
    "gemma4-dict": '"{" space ("}" | gemma4-dict-kv ("," space gemma4-dict-kv)* space "}")',
    "gemma4-dict-key": 'gemma4-dict-key-name ":"',
    "gemma4-dict-key-name": "[^:}]+",
    "gemma4-dict-kv": "gemma4-dict-key space gemma4-value",
    "gemma4-null": "json-null",
    "gemma4-number": "json-number",
    "gemma4-string": '"<|\\"|>" gemma4-string-content "<|\\"|>"',
    "gemma4-string-content": "gemma4-until-quote",
    "gemma4-value": "gemma4-string | gemma4-dict | gemma4-array | gemma4-number | gemma4-bool | gemma4-null",
}
GIGACHAT_CALL = "<|message_sep|>\n\nfunction call<|role_sep|>\n"


def _add(b: Builder, rules: list[str] | dict[str, str]) -> None:
    b.rules.update(rules.items() if isinstance(rules, dict) else (r.split(" ::= ", 1) for r in rules))


def gpt_oss_call(b: Builder, parallel: bool) -> str:
    """gpt-oss.cpp: the recipient in the role header (` to=functions.NAME<|channel|>commentary...`) or in the
    channel header (`<|channel|>commentary to=functions.NAME...`), an optional constraint, `<|message|>`, JSON.
    One call: the handler has no parallel calls."""
    channel = '"<|channel|>" ("commentary" | "analysis")'
    constraint = '(space "<|constrain|>"? [A-Za-z0-9_-]+)?'

    def tool(n: str, p: dict) -> str:
        name = f'" to=functions." {lit(n)}'
        schema = schema_rule(b, n, p)
        return (f'({name} {channel} {constraint} "<|message|>") {schema} | '
                f'({channel} {name} {constraint} "<|message|>") {schema}')
    return b.rule("tool-call", b.each(tool))


def gpt_oss_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """`(start any)* start tool-call` after its `<|start|>assistant`: analysis or preamble messages, each followed
    by a new `<|start|>assistant`, then the call."""
    _add(b, until("message-content", "<|end|>"))
    b.rule("analysis", '("<|channel|>commentary" " to=assistant"?)? "<|channel|>analysis<|message|>" '
                       'message-content "<|end|>"')
    b.rule("preamble", '"<|channel|>commentary<|message|>" message-content "<|end|>"')
    call = gpt_oss_call(b, parallel)
    return f'((preamble | analysis) "<|start|>assistant")* {call}'


def lfm2_call(b: Builder, parallel: bool) -> str:
    """lfm2.cpp (`python_style_tool_calls`): `<|tool_call_start|>[name(key=value, ...)]<|tool_call_end|>`, a
    `string` parameter a quoted string, any other a Python or JSON value; arguments in any order, repeated."""
    _add(b, PYTHON_RULES)

    def tool(n: str, p: dict) -> str:
        props = p.get("properties") or {}
        alts = " | ".join(f'({lit(k)} "=") ' + (f"({DQ} | {SQ})" if isinstance(v, dict) and v.get("type") == "string"
                                                else "python-or-json-value") for k, v in props.items())
        args = f'(({alts}) ("," space ({alts}))*) ' if props else ""
        return f'({lit(n)} "(") space {args}space ")"'
    tools = b.each(tool)
    more = f' ("," space {tools})*' if parallel else ""
    return b.rule("tool-call", f'"<|tool_call_start|>" "[" space {tools}{more} space "]" "<|tool_call_end|>"')


def lfm2_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """`reasoning? until(<|tool_call_start|>) tool-calls`, the reasoning block only when the template has
    `<think>` (lfm2.cpp's `extract_reasoning`)."""
    call = lfm2_call(b, parallel)
    _add(b, until_any("lead-text", ("<|tool_call_start|>",)))
    lead = f"lead-text {call}"
    if thinking:
        _add(b, until("thinking", "</think>"))
        return f'thinking "</think>" {lead}'
    if think:
        _add(b, until("thinking", "</think>"))
        return f'("<think>" thinking "</think>")? {lead}'
    return lead


def gemma4_call(b: Builder, parallel: bool) -> str:
    """gemma4.cpp: `<|tool_call>call:NAME{key:value,...}<tool_call|>`, the arguments Gemma's own dictionary
    (strings between `<|"|>`), not the schema's; one call, or one or more when parallel."""
    _add(b, GEMMA4_RULES)
    _add(b, until("gemma4-until-quote", '<|"|>'))
    one = f'("<|tool_call>call:" {b.each(lambda n, p: f"({lit(n)}) gemma4-dict")} "<tool_call|>")'
    return b.rule("tool-call", one + ("+" if parallel else ""))


def gemma4_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """`start (thought | ) tool-call` after its `<|turn>model\\n`: a thought channel, then the calls (no text)."""
    _add(b, until("thought-text", "<channel|>"))
    b.rule("thought", '"<|channel>thought" space thought-text "<channel|>"')
    return f"thought? {gemma4_call(b, parallel)}"


def gigachat_call(b: Builder, parallel: bool) -> str:
    """gigachat-v3.cpp: `<|message_sep|>\\n\\nfunction call<|role_sep|>\\n{"name": ..., "arguments": ...}`, one
    call (the handler has no parallel calls)."""
    return b.rule("tool-call", f"{lit(GIGACHAT_CALL)} {b.each(lambda n, p: json_object(b, n, p))}")


def gigachat_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """Text up to `<|message_sep|>\\n\\n`, `space`, the call."""
    _add(b, until_any("lead-text", ("<|message_sep|>\n\n",)))
    return f"lead-text space {gigachat_call(b, parallel)}"


def cohere2moe_call(b: Builder, parallel: bool) -> str:
    """cohere2moe.cpp: `<|START_ACTION|>[{"tool_call_id": ..., "tool_name": ..., "parameters": ...}]<|END_ACTION|>`,
    `standard_json_tools` as Command R7B's."""
    return SERVER_SHAPES["command-r7b"](b, parallel, "<|START_ACTION|>")


def cohere2moe_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """After its generation prompt (which opens `<|START_THINKING|>`): the thinking up to its end, the text's or
    the calls' start, `<|END_THINKING|>`?, the calls (no text: text and calls exclude each other), the turn's
    end optional."""
    _add(b, until_any("thinking", ("<|END_THINKING|>", "<|START_TEXT|>", "<|START_ACTION|>")))
    return f'thinking "<|END_THINKING|>"? {cohere2moe_call(b, parallel)} "<|END_OF_TURN_TOKEN|>"?'


Build = Callable[[Builder, bool], str]
CALLS: dict[str, tuple[str, Build]] = {  # format: (trigger word, the trigger rule)
    "gpt-oss": ("<|channel|>", gpt_oss_call),
    "lfm2": ("<|tool_call_start|>", lfm2_call),
    "gemma4": ("<|tool_call>", gemma4_call),
    "gigachat-v3": (GIGACHAT_CALL, gigachat_call),
    "cohere2moe": ("<|START_ACTION|>", cohere2moe_call),
    "minimax-m3": (MINIMAX_M3_START, minimax_m3_call),
    "ling3": ("<tool_call>", ling3_call),
    "muse-glimmer": (" to=", muse_call),
    "minicpm5": (MINICPM5_TRIGGER, minicpm5_call),
    **DSML_CALLS,
}
ROOTS = {"gpt-oss": gpt_oss_root, "lfm2": lfm2_root, "gemma4": gemma4_root, "gigachat-v3": gigachat_root,
         "cohere2moe": cohere2moe_root, "minimax-m3": minimax_m3_root, "ling3": ling3_root, "muse-glimmer": muse_root,
         "minicpm5": minicpm5_root, "kimi-k3": kimi_k3_root, **DSML_ROOTS}
TRIGGERS = {  # gpt-oss.cpp's patterns; the grammar starts at the first group (or the match)
    "gpt-oss": (r"^\s+to$", r"^<\|channel\|>(?:commentary|analysis)\s+to=functions$",
                r"<\|start\|>assistant(\s+to)", r"<\|start\|>assistant(<\|channel\|>(?:commentary|analysis)\s+to)"),
    "muse-glimmer": (MUSE_TRIGGER,),
}


def trigger_patterns(name: str, word: str) -> tuple[str, ...]:
    """The lazy grammar's trigger patterns, as llama-server gives them to llama.cpp."""
    return TRIGGERS.get(name, (regex_escape(word),))


def regex_escape(word: str) -> str:
    """common.cpp's `regex_escape`: a backslash before each of `.^$|()*+?[]{}\\` (nothing else)."""
    return re.sub(r"[.^$|()*+?\[\]{}\\]", lambda m: "\\" + m.group(0), word)
