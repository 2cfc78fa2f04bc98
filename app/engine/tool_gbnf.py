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
- A parameter written as tags (Qwen3-Coder, GLM 4.5, Seed-OSS, MiniMax-M2) is free text up to its closing tag
  when its schema may be a string, else JSON of its schema, as llama.cpp's tagged parser builds it; a string
  enum is one of its values, a string with a maxLength at most that many characters on one line, no `<`.
- Where llama-server's grammar makes an optional call id mandatory by a misplaced comma (Mistral Nemo's "id",
  Command R7B's "tool_call_id"), Chorus asks for the id, so the call is valid JSON that both grammars allow.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from llama_cpp.llama_grammar import SchemaConverter

from app.engine.grammar import GrammarError, closed_objects


def lit(text: str) -> str:
    """A GBNF string literal."""
    return json.dumps(text, ensure_ascii=False)


def until(name: str, stop: str) -> list[str]:
    """Rules `name` ::= any text that does not contain `stop` (a KMP automaton over its characters, as
    llama.cpp's `until` parsers become rules)."""
    fail = [0] * len(stop)  # KMP failure function
    k = 0
    for i in range(1, len(stop)):
        while k and stop[i] != stop[k]:
            k = fail[k - 1]
        k += stop[i] == stop[k]
        fail[i] = k
    chars = sorted(set(stop))

    def step(state: int, c: str) -> int:
        while state and stop[state] != c:
            state = fail[state - 1]
        return state + (stop[state] == c)

    def state_name(s: int) -> str:
        return name if s == 0 else f"{name}-{s:02d}"

    def cls(cs) -> str:
        return "".join("\\" + c if c in "]\\^-[" else ("\\n" if c == "\n" else c) for c in cs)

    rules = []
    for s in range(len(stop)):
        nexts = {c: step(s, c) for c in chars}
        moves = {c: t for c, t in nexts.items() if 0 < t < len(stop)}  # the rest back to 0, or `stop` (barred)
        barred = sorted(c for c, t in nexts.items() if t)
        alts = ['""', *(f"[{cls(c)}] {state_name(t)}" for c, t in sorted(moves.items()))]
        alts.append(f"[^{cls(barred)}] {name}")
        rules.append(f"{state_name(s)} ::= {' | '.join(alts)}")
    return rules


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
_COMMA = f'{SP} "," {SP}'


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


def _json_array(start: str, end: str, **keys) -> Callable[[Builder, bool], str]:
    """start [call, ...] end: the calls as a JSON list after a marker (Mistral Nemo, Granite, Command R7B...)."""
    def build(b: Builder, parallel: bool) -> str:
        one = b.each(lambda n, p: json_object(b, n, p, **keys))
        tail = f" {SP} {lit(end)}" if end else ""
        return f'{lit(start)} "[" {calls(one, parallel, _COMMA)} "]"{tail}'
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


_ID = '"\\"" [0-9]{1,4} "\\""'  # a call id the model makes up: digits, as a JSON string
_MISTRAL_ID = '"\\"" [a-zA-Z0-9]{9} "\\""'  # Mistral's: nine letters and digits
_NL = '"\\n"?'
_DS_SEP, _DS_CALL, _DS_END = "<｜tool▁sep｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"
_DS_SECTION = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")


def _tagged(call: tuple[str, str], func: tuple[str, str, str], key: tuple[str, str], value: tuple[str, str],
            section: tuple[str, str] = ("", "")) -> Callable[[Builder, bool], str]:
    """call[0] func[0] NAME func[1] parameters as tags func[2] call[1] (Qwen3-Coder's XML, GLM's arg tags)."""
    def body(b: Builder, n: str, p: dict) -> str:
        close = f" {lit(func[2])}" if func[2] else ""
        return f"{lit(func[0] + n + func[1])} {tagged_params(b, n, p, key, value)}{close}"
    return _wrapped(call[0], call[1], body, section=section)


def _schema(b: Builder, n: str, p: dict) -> str:
    return b.schema(p, f"tool-{n}-schema")


BUILDERS: dict[str, tuple[str | None, Callable[[Builder, bool], str]]] = {
    # format name (chat_parse.detect): (lazy trigger word, or None where llama-server has none; root body)
    "hermes": ("<tool_call>", _wrapped("<tool_call>\n", "</tool_call>",
                                       lambda b, n, p: f"{json_object(b, n, p)} {_NL}")),
    "llama-3.x": (None, lambda b, par: calls(b.each(lambda n, p: json_object(b, n, p, args_key="parameters")),
                                             par, _COMMA)),
    "mistral-nemo": ("[TOOL_CALLS]", _json_array(
        "[TOOL_CALLS]", "", id_tail=f' space "," space "\\"id\\"" space ":" space {_MISTRAL_ID}')),
    "command-r7b": ("<|START_ACTION|>", _json_array(
        "<|START_ACTION|>", "<|END_ACTION|>", name_key="tool_name", args_key="parameters",
        id_field=f'"\\"tool_call_id\\"" space ":" space {_ID} space "," space ')),
    "granite": ("<|tool_call|>", _json_array("<|tool_call|>", "")),
    "nemotron-v2": ("<TOOLCALL>", _json_array("<TOOLCALL>", "</TOOLCALL>")),
    "apriel": ("<tool_calls>", _json_array("<tool_calls>", "</tool_calls>")),
    "apriel-thinker": ("<tool_calls>", _json_array("<tool_calls>", "</tool_calls>")),
    "firefunction-v2": ("functools", _json_array(" functools", "")),
    "functionary-v3.1-llama-3.1": ("<function=", _wrapped(
        "<function=", "</function>", lambda b, n, p: f"{lit(n + '>')} {_schema(b, n, p)}")),
    "functionary-v3.2": (None, _wrapped("", "", lambda b, n, p: f"{lit(n + chr(10))} {_schema(b, n, p)}",
                                        sep=f'{_NL} ">>>"')),
    "deepseek-r1": ("<｜tool▁calls▁begin｜>", _wrapped(
        _DS_CALL, _DS_END, lambda b, n, p: f'{lit("function" + _DS_SEP + n)} "\\n```json\\n" {_schema(b, n, p)} '
                                           f'{_NL} "```"', section=_DS_SECTION)),
    "deepseek-v3.1": ("<｜tool▁calls▁begin｜>", _wrapped(
        _DS_CALL, _DS_END, lambda b, n, p: f"{lit(n + _DS_SEP)} {_schema(b, n, p)}", section=_DS_SECTION)),
    "kimi-k2": ("<|tool_call_begin|>", _wrapped(
        "<|tool_call_begin|>", "<|tool_call_end|>",
        lambda b, n, p: f'{lit("functions." + n + ":")} [0-9]{{1,3}} "<|tool_call_argument_begin|>" '
                        f'{_schema(b, n, p)}')),
    "magistral": ("[TOOL_CALLS]", _wrapped(
        "[TOOL_CALLS]", "", lambda b, n, p: f'{lit(n)} ("[CALL_ID]" [a-zA-Z0-9]{{9}})? "[ARGS]" {_schema(b, n, p)}',
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
}


def _server_json(end: str, array: bool, per_call: bool, **keys) -> Callable[[Builder, bool, str], str]:
    """llama-server's shape of JSON calls (`standard_json_tools`, common/chat-peg-parser.cpp): START space
    ("[" space)? calls (space "," space between them when parallel) (space "]")? space END, and for a marker per
    call (Hermes, Nemotron v2) one or more such calls, each followed by `space`, whatever `parallel` says."""
    def build(b: Builder, parallel: bool, start: str) -> str:
        inner = calls(b.each(lambda n, p: json_object(b, n, p, **keys)), parallel, 'space "," space')
        if array:
            inner = f'"[" space {inner} space "]"'
        b.rule("tool-call", f"{lit(start)} space {inner} space {lit(end)}")
        return b.rule("tool-calls", "(tool-call space)+") if per_call else "tool-call"
    return build


# Formats whose required grammar here is llama-server's own shape (the others keep Chorus's, docs/tools.md).
SERVER_SHAPES: dict[str, Callable[[Builder, bool, str], str]] = {
    "hermes": _server_json("</tool_call>", False, True),
    "nemotron-v2": _server_json("</TOOLCALL>", True, True),
    "apriel": _server_json("</tool_calls>", True, False),
    "apriel-thinker": _server_json("</tool_calls>", True, False),
    "firefunction-v2": _server_json("", True, False),
}


def until_any(name: str, stops: tuple[str, ...]) -> list[str]:
    """Rules `name` ::= any text that contains none of `stops` (a state per prefix of a stop, as llama.cpp's
    Aho-Corasick `until` rules; same language as `until` for one stop)."""
    prefixes = sorted({s[:i] for s in stops for i in range(len(s))}, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(prefixes)}
    chars = sorted(set("".join(stops)))

    def step(state: str, c: str) -> str | None:  # None: a stop is complete (barred)
        text = state + c
        if any(text.endswith(s) for s in stops):
            return None
        return next(text[i:] for i in range(len(text) + 1) if text[i:] in index)

    def state_name(p: str) -> str:
        return name if not p else f"{name}-{index[p]:02d}"

    def cls(cs) -> str:
        return "".join("\\" + c if c in "]\\^-[" else ("\\n" if c == "\n" else c) for c in cs)

    rules = []
    for p in prefixes:
        nexts = {c: step(p, c) for c in chars}
        alts = ['""', *(f"[{cls(c)}] {state_name(t)}" for c, t in nexts.items() if t)]
        alts.append(f"[^{cls([c for c, t in nexts.items() if t != ''])}] {name}")
        rules.append(f"{state_name(p)} ::= {' | '.join(alts)}")
    return rules


def tool_gbnf(format_name: str, tools: tuple[dict, ...], parallel: bool, thinking: bool = False,
              lead: tuple[str, ...] = (), think: tuple[str, str] | None = None) -> str:
    """The grammar of one call (or, with `parallel`, one or more) in the format's syntax; with `thinking`, after
    the rest of an open thinking block (free text up to `</think>`).

    `lead`: llama-server's required grammar: any text that contains none of these stops (the calls' trigger) may
    come before the calls, and, when the template has thinking markers `think` (or `thinking`), a thinking block
    first (common/chat-auto-parser-generator.cpp: `reasoning? until(trigger)? tool-calls`)."""
    b = Builder(tools)
    shape = SERVER_SHAPES.get(format_name) if lead else None
    root = shape(b, parallel, lead[0]) if shape else BUILDERS[format_name][1](b, parallel)
    if lead:
        b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", lead))
        root = f"lead-text {root}"
        if thinking or think:
            start, end = ("", "</think>") if thinking else think
            b.rules.update(r.split(" ::= ", 1) for r in until("thinking", end))
            opening = f"space {lit(start)} " if start else ""
            root = f"({opening}thinking {lit(end)})? {root}"
        return b.text(root)
    if thinking:
        b.rules.update(r.split(" ::= ", 1) for r in until("thinking", "</think>"))
        root = f'thinking "</think>" [ \n]* {root}'
    return b.text(root)
