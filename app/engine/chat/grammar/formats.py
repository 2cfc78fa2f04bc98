"""The GBNF of a reply's tool calls, per output format, shaped as llama-server shapes its tool grammar (the
grammar its PEG parsers derive: common/chat-auto-parser-generator.cpp, `standard_json_tools` in
common/chat-peg-parser.cpp, common/parsers/*.cpp), with the rule names it uses (`tool-call`, `tool-NAME`,
`tool-NAME-schema`, `tool-NAME-arg-KEY`).

- Markers are spelled as llama-server spells them (its analysis keeps their newlines: Hermes' "<tool_call>\\n").
- JSON comes from the tools' schemas through llama-cpp-python's port of json-schema-to-grammar (objects closed
  as llama.cpp closes them), its whitespace that of llama.cpp's current converter (`CurrentSpacing`). Where
  llama-server allows any whitespace between markers (its `space`), Chorus allows one optional newline or
  space: every call Chorus's grammar allows reads the same to the parser, and a small model has no room to
  ramble in whitespace.
- A parameter written as tags (Qwen3-Coder, GLM 4.5, Hy3, Seed-OSS, MiniMax-M2) is free text up to its closing tag
  when its schema may be a string, else JSON of its schema, as llama.cpp's tagged parser builds it; a string
  enum is one of its values, a string with a maxLength at most that many characters on one line, no `<`.
- Where llama-server's grammar makes an optional call id mandatory by a misplaced comma (Mistral Nemo's "id",
  Command R7B's "tool_call_id"), Chorus asks for the id, so the call is valid JSON that both grammars allow.
"""

from __future__ import annotations

from collections.abc import Callable

from app.engine.chat.grammar.build import (
    CALL_ID,
    COMMA,
    DS_CALL,
    DS_END,
    DS_SECTION,
    DS_SEP,
    MISTRAL_ID,
    NL,
    SP,
    Builder,
    calls,
    json_object,
    schema_rule,
    tagged_params,
)
from app.engine.chat.grammar.handlers import CALLS, ROOTS
from app.engine.chat.grammar.kimi_k3 import TOOLS_START, kimi_k3_first
from app.engine.chat.grammar.server import SERVER_SHAPES, kimi_root, ministral_root, qwen3_coder_root
from app.engine.chat.grammar.text import lit, until, until_any
from app.engine.chat.parse.formats import HY3


def _json_array(start: str, end: str, **keys) -> Callable[[Builder, bool], str]:
    """start [call, ...] end: the calls as a JSON list after a marker (Mistral Nemo, Granite, Command R7B...)."""
    def build(b: Builder, parallel: bool) -> str:
        one = b.each(lambda n, p: json_object(b, n, p, **keys))
        tail = f" {SP} {lit(end)}" if end else ""
        return f'{lit(start)} "[" {calls(one, parallel, COMMA)} "]"{tail}'
    return build


def _json_objects(start: str, end: str) -> Callable[[Builder, bool], str]:
    """start call ("," call)* end: JSON call objects after a marker, not in a list (MiniMax-M1)."""
    def build(b: Builder, parallel: bool) -> str:
        return f"{lit(start)} {calls(b.each(lambda n, p: json_object(b, n, p)), parallel, COMMA)} {lit(end)}"
    return build


def _wrapped(start: str, end: str, body: Callable[[Builder, str, dict], str], sep: str = SP,
             section: tuple[str, str] = ("", "")) -> Callable[[Builder, bool], str]:
    """start BODY end per call (one rule per tool), repeated when parallel, inside `section` if any."""
    def build(b: Builder, parallel: bool) -> str:
        one = f"{lit(start)} {b.each(lambda n, p: body(b, n, p))}" + (f" {lit(end)}" if end else "")
        inner = calls(b.rule("tool-call", one), parallel, sep)
        if section[0]:
            return f"{lit(section[0])} {inner} {lit(section[1])}"
        return inner
    return build


def _tagged(call: tuple[str, str], func: tuple[str, str, str], key: tuple[str, str], value: tuple[str, str],
            section: tuple[str, str] = ("", "")) -> Callable[[Builder, bool], str]:
    """call[0] func[0] NAME func[1] parameters as tags func[2] call[1] (Qwen3-Coder's XML, GLM's arg tags)."""
    def body(b: Builder, n: str, p: dict) -> str:
        close = f" {lit(func[2])}" if func[2] else ""
        return f"{lit(func[0] + n + func[1])} {tagged_params(b, n, p, key, value)}{close}"
    return _wrapped(call[0], call[1], body, section=section)


BUILDERS: dict[str, tuple[str | None, Callable[[Builder, bool], str]]] = {
    # format name (parse.detect): (lazy trigger word, or None where llama-server has none; root body)
    "hermes": ("<tool_call>", _wrapped("<tool_call>\n", "</tool_call>",
                                       lambda b, n, p: f"{json_object(b, n, p)} {NL}")),
    "llama-3.x": (None, lambda b, par: calls(b.each(lambda n, p: json_object(b, n, p, args_key="parameters")),
                                             par, COMMA)),
    "mistral-nemo": ("[TOOL_CALLS]", _json_array(
        "[TOOL_CALLS]", "", id_tail=f' space "," space "\\"id\\"" space ":" space {MISTRAL_ID}')),
    "command-r7b": ("<|START_ACTION|>", _json_array(
        "<|START_ACTION|>", "<|END_ACTION|>", name_key="tool_name", args_key="parameters",
        id_field=f'"\\"tool_call_id\\"" space ":" space {CALL_ID} space "," space ')),
    "granite": ("<|tool_call|>", _json_array("<|tool_call|>", "")),
    "command-r-plus": ("Action:\n```json\n", _json_array(
        "Action:\n```json\n", "```", name_key="tool_name", args_key="parameters")),
    "nemotron-v2": ("<TOOLCALL>", _json_array("<TOOLCALL>", "</TOOLCALL>")),
    "apriel": ("<tool_calls>", _json_array("<tool_calls>", "</tool_calls>")),
    "apriel-thinker": ("<tool_calls>", _json_array("<tool_calls>", "</tool_calls>")),
    # MiniMax-M1: the objects on lines as its template writes them, "," between them as llama-server requires
    "minimax-m1": ("<tool_calls>", _json_objects("<tool_calls>\n", "\n</tool_calls>")),
    "firefunction-v2": ("functools", _json_array(" functools", "")),
    "functionary-v3.1-llama-3.1": ("<function=", _wrapped(
        "<function=", "</function>", lambda b, n, p: f"{lit(n + '>')} {schema_rule(b, n, p)}")),
    # Several calls follow each other directly (no ">>>", no blank between), as llama-server's grammar has them
    # (common/parsers/functionary-v3-2.cpp: one_or_more(tool_choice)).
    "functionary-v3.2": (None, _wrapped("", "", lambda b, n, p: f"{lit(n + chr(10))} {schema_rule(b, n, p)}",
                                        sep="")),
    "deepseek-r1": ("<｜tool▁calls▁begin｜>", _wrapped(
        DS_CALL, DS_END, lambda b, n, p: f'{lit("function" + DS_SEP + n)} "\\n```json\\n" {schema_rule(b, n, p)} '
                                           f'{NL} "```"', section=DS_SECTION)),
    "deepseek-v3.1": ("<｜tool▁calls▁begin｜>", _wrapped(
        DS_CALL, DS_END, lambda b, n, p: f"{lit(n + DS_SEP)} {schema_rule(b, n, p)}", section=DS_SECTION)),
    "kimi-k2": ("<|tool_call_begin|>", _wrapped(
        "<|tool_call_begin|>", "<|tool_call_end|>",
        lambda b, n, p: f'{lit("functions." + n + ":")} [0-9]{{1,3}} "<|tool_call_argument_begin|>" '
                        f'{schema_rule(b, n, p)}')),
    "magistral": ("[TOOL_CALLS]", _wrapped(
        "[TOOL_CALLS]", "", lambda b, n, p: f'{lit(n)} ("[CALL_ID]" [a-zA-Z0-9]{{9}})? "[ARGS]" {schema_rule(b, n, p)}',
        sep='""')),
    "qwen3-coder": ("<tool_call>", _tagged(("<tool_call>\n", "</tool_call>"), ("<function=", ">\n", "</function>\n"),
                                           ("<parameter=", ">\n"), ("", "\n</parameter>\n"))),
    "seed-oss": ("<seed:tool_call>", _tagged(("<seed:tool_call>\n", "</seed:tool_call>"),
                                             ("<function=", ">\n", "</function>\n"),
                                             ("<parameter=", ">"), ("", "</parameter>\n"))),
    "minimax-m2": ("<minimax:tool_call>", _tagged(("<invoke name=\"", "</invoke>\n"), ("", "\">\n", ""),
                                                  ("<parameter name=\"", "\">"), ("", "</parameter>\n"),
                                                  section=("<minimax:tool_call>\n", "</minimax:tool_call>"))),
    "glm-4.5": ("<tool_call>", _tagged(("<tool_call>", "</tool_call>"), ("", "\n", ""),
                                       ("<arg_key>", "</arg_key>\n"), ("<arg_value>", "</arg_value>\n"))),
    "hy3": (HY3.section[0].rstrip(), _tagged((HY3.call[0], ""), ("", HY3.name_suffix + "\n", HY3.extra["close"]),
                                             HY3.param[:2], (HY3.extra["value_prefix"], HY3.param[2]),
                                             section=HY3.section)),
    # llama-server's trigger rule itself (its lazy grammar): the JSON-native Apertus and GigaChat 3.1, Solar Open
    # (whose calls must carry the id call00001, as llama-server's grammar has them), and the
    # formats with a handler of their own (handlers.py)
    "apertus": ("<|tools_prefix|>", lambda b, par: SERVER_SHAPES["apertus"](b, par, "<|tools_prefix|>")),
    "gigachat-v3.1": ("<|function_call|>", lambda b, par: SERVER_SHAPES["gigachat-v3.1"](b, par, "<|function_call|>")),
    "solar-open": ("<|tool_calls|>", lambda b, par: SERVER_SHAPES["solar-open"](b, par, "<|tool_calls|>")),
    # Kimi K3: Chorus's call-first grammar (its lazy one is the handler's trigger rule: tool_choice.auto_gbnf)
    "kimi-k3": (TOOLS_START, kimi_k3_first),
    **CALLS,
}


def tool_gbnf(format_name: str, tools: tuple[dict, ...], parallel: bool, thinking: bool = False,
              lead: tuple[str, ...] = (), think: tuple[str, str] | None = None, variant: str = "",
              wrap: tuple[str, str] | None = None) -> str:
    """The grammar of one call (or, with `parallel`, one or more) in the format's syntax; with `thinking`, after
    the rest of an open thinking block (free text up to `</think>`).

    `lead`: llama-server's required grammar: any text that contains none of these stops (the calls' trigger) may
    come before the calls, and, when the template has thinking markers `think` (or `thinking`), a thinking block
    first (common/chat-auto-parser-generator.cpp: `reasoning? until(trigger)? tool-calls`). `variant`
    "ministral-3": llama.cpp's own parser for Ministral 3 / Devstral (format `magistral` here). `wrap`: the
    template always wraps its content in these markers (Command R7B's <|START_RESPONSE|>); then llama-server's
    text before the calls is not free but one optional wrapped reply (`build_tool_parser_json_native`:
    reasoning? (START until(END) END)? tool-calls)."""
    b = Builder(tools)
    if lead and variant == "ministral-3":
        return b.text(ministral_root(b, parallel))
    if lead and format_name == "kimi-k2":
        return b.text(kimi_root(b, parallel, thinking))
    if lead and format_name in ROOTS:
        return b.text(ROOTS[format_name](b, parallel, thinking, think))
    if lead and format_name == "qwen3-coder":
        return b.text(qwen3_coder_root(b, parallel, thinking, think is not None))
    shape = SERVER_SHAPES.get(format_name) if lead else None
    root = shape(b, parallel, lead[0]) if shape else BUILDERS[format_name][1](b, parallel)
    if lead:
        if wrap:
            b.rules.update(r.split(" ::= ", 1) for r in until("wrapped-text", wrap[1]))
            root = f"({lit(wrap[0])} wrapped-text {lit(wrap[1])})? {root}"
        else:
            b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", lead))
            root = f"lead-text {root}"
        if thinking or think:
            start, end = think or ("<think>", "</think>")
            start = "" if thinking else start
            b.rules.update(r.split(" ::= ", 1) for r in until("thinking", end))
            opening = (f"{lit(start)} " if wrap else f"space {lit(start)} ") if start else ""
            root = f"({opening}thinking {lit(end)})? {root}"
        return b.text(f"space {root}" if wrap else root)  # wrapped: the `space` after llama.cpp's prefix parser
    if thinking:
        b.rules.update(r.split(" ::= ", 1) for r in until("thinking", "</think>"))
        root = f'thinking "</think>" [ \n]* {root}'
    return b.text(root)
