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

import itertools
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


def _server_tagged(call: tuple[str, str], name: tuple[str, str, str], key: tuple[str, str], value: tuple[str, str],
                   section: bool = False) -> Callable[[Builder, bool, str], str]:
    """llama-server's shape of tagged calls (`build_tool_parser_tag_tagged`, common/chat-auto-parser-generator.cpp):
    CALL0 space (name[0] NAME name[1] space ARGS (space name[2])?) space CALL1, ARGS the required parameters in
    order (`space` between), then `space` and any optional one, any number of times; a string parameter's value
    runs up to and including its closing tag, another is JSON of its schema and the tag. With `section`, the
    markers wrap all calls (", " between them), else each call (`space` between, and after)."""
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
            return f"{lit(name[0] + n + name[1])} space {args or chr(34) * 2}{close}"
        tools = b.each(tool)
        if section:
            inner = f'{tools} ({lit(", ")} {tools})*' if parallel else tools
            return b.rule("tool-call", f"{lit(call[0])} space {inner} space {lit(call[1])}")
        one = f"{lit(call[0])} space {tools} space {lit(call[1])}"
        return b.rule("tool-call", f"{one} (space {one})* space" if parallel else f"{one} space")
    return build


def _server_json_tag(call: tuple[str, str], section: tuple[str, str], sep: str
                     ) -> Callable[[Builder, bool, str], str]:
    """llama-server's shape of NAME + JSON arguments calls (`build_tool_parser_tag_json`): per call CALL0 (NAME
    SEP space JSON) CALL1, `space` between calls, inside SECTION0 space ... space SECTION1 when there is one."""
    def build(b: Builder, parallel: bool, start: str) -> str:
        one = f"{lit(call[0])} {b.each(lambda n, p: f'{lit(n + sep)} space {_schema(b, n, p)}')} {lit(call[1])}"
        b.rule("tool-call", f"{one} (space {one})*" if parallel else one)
        if not section[0]:
            return "tool-call"
        return b.rule("tool-calls", f"{lit(section[0])} space tool-call space {lit(section[1])}")
    return build


def _llama3_object(b: Builder, n: str, p: dict) -> str:
    """Llama 3.x's call object as llama-server writes its rule: an optional `"type": "function"` first."""
    kind = f'{lit(json.dumps("type"))} space ":" space {lit(json.dumps("function"))} space "," space'
    return json_object(b, n, p, args_key="parameters", id_field=f"({kind})? ")


# Formats whose required grammar here is llama-server's own shape (the others keep Chorus's, docs/tools.md).
SERVER_SHAPES: dict[str, Callable[[Builder, bool, str], str]] = {
    "hermes": _server_json("</tool_call>", False, True),
    "llama-3.x": lambda b, parallel, start: b.rule("tool-call", '"" space ' + calls(
        b.each(lambda n, p: _llama3_object(b, n, p)), parallel, 'space "," space') + ' space ""'),
    "mistral-nemo": _server_json("", True, False, id_tail=f' space "," space "\\"id\\"" space ":" space {_MISTRAL_ID}'),
    "command-r7b": _server_json("<|END_ACTION|>", True, False, name_key="tool_name", args_key="parameters",
                                id_field=f'"\\"tool_call_id\\"" space ":" space {_ID} space "," space '),
    "functionary-v3.1-llama-3.1": _server_json_tag(("<function=", "</function>"), ("", ""), ">"),
    "deepseek-v3.1": _server_json_tag((_DS_CALL, _DS_END), _DS_SECTION, _DS_SEP),
    "glm-4.5": _server_tagged(("<tool_call>", "</tool_call>"), ("", "\n", ""), ("<arg_key>", "</arg_key>\n"),
                              ("<arg_value>", "</arg_value>\n")),
    "seed-oss": _server_tagged(("<seed:tool_call>\n", "</seed:tool_call>"), ("<function=", ">\n", "</function>\n"),
                               ("<parameter=", ">"), ("", "</parameter>\n")),
    "minimax-m2": _server_tagged(("<minimax:tool_call>\n", "</minimax:tool_call>"), ("<invoke name=\"", "\">\n",
                                 "</invoke>\n"), ("<parameter name=\"", "\">"), ("", "</parameter>\n"), section=True),
    "nemotron-v2": _server_json("</TOOLCALL>", True, True),
    "apriel": _server_json("</tool_calls>", True, False),
    "apriel-thinker": _server_json("</tool_calls>", True, False),
    "firefunction-v2": _server_json("", True, False),
}


def _stop_rules(name: str, stops: tuple[str, ...], including: bool) -> list[str]:
    """A state per proper prefix of a stop (the longest one the text ends with), as llama.cpp's Aho-Corasick
    rules: `including`, the text runs up to and including the first stop; else it contains none."""
    prefixes = sorted({s[:i] for s in stops for i in range(len(s))}, key=lambda p: (len(p), p))
    index = {p: i for i, p in enumerate(prefixes)}
    chars = sorted(set("".join(stops)))

    def step(state: str, c: str) -> str | None:  # None: a stop is complete
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
        done = [c for c, t in nexts.items() if t is None]
        alts = [f"[{cls(done)}]"] if including and done else [] if including else ['""']
        alts += [f"[{cls(c)}] {state_name(t)}" for c, t in nexts.items() if t]
        alts.append(f"[^{cls([c for c, t in nexts.items() if t != ''])}] {name}")
        rules.append(f"{state_name(p)} ::= {' | '.join(alts)}")
    return rules


def until_any(name: str, stops: tuple[str, ...]) -> list[str]:
    """Rules `name` ::= any text that contains none of `stops` (llama.cpp's `until` rules; the same language as
    `until` for one stop)."""
    return _stop_rules(name, stops, including=False)


def through(name: str, stop: str) -> list[str]:
    """Rules `name` ::= any text up to and including the first `stop` (llama.cpp's `ac` rules)."""
    return _stop_rules(name, (stop,), including=True)


def _kimi_root(b: Builder, parallel: bool, thinking: bool) -> str:
    """common/parsers/kimi-k2.cpp's grammar after its generation prompt: a thinking block (its end optional),
    text up to either call marker, then `<|tool_calls_section_begin|>`? and the calls, end markers optional."""
    stops = ("<|tool_calls_section_begin|>", "<|tool_call_begin|>")
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", stops))
    b.rules.update(r.split(" ::= ", 1) for r in until_any("thinking", ("</think>", *stops)))
    tool = b.each(lambda n, p: f'{lit("functions." + n + ":")} [0-9]+ "<|tool_call_argument_begin|>" '
                               f'{_schema(b, n, p)} "<|tool_call_end|>"?')
    b.rule("tool-call", f'("<|tool_call_begin|>" {tool}){"+" if parallel else ""} "<|tool_calls_section_end|>"?')
    b.rule("tool-calls", '"<|tool_calls_section_begin|>"? tool-call')
    opening = "" if thinking else '"<think>" '
    return f'({opening}thinking "</think>"?)? lead-text tool-calls'


def _qwen3_coder_root(b: Builder, parallel: bool, thinking: bool, thinks: bool) -> str:
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


def _ministral_root(b: Builder, parallel: bool) -> str:
    """common/parsers/ministral3.cpp's grammar (Ministral 3, Devstral: no `[CALL_ID]`): a `[THINK]` block,
    text up to `[TOOL_CALLS]`, then `[TOOL_CALLS]NAME[ARGS]{...}` once, or more when parallel."""
    b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", ("[TOOL_CALLS]",)))
    b.rules.update(r.split(" ::= ", 1) for r in until_any("thinking", ("[/THINK]",)))
    tool = b.each(lambda n, p: f'{lit(n)} "[ARGS]" {_schema(b, n, p)}')
    b.rule("tool-call", f'("[TOOL_CALLS]" {tool}){"+" if parallel else ""}')
    return '("[THINK]" thinking "[/THINK]")? space lead-text space tool-call'


def tool_gbnf(format_name: str, tools: tuple[dict, ...], parallel: bool, thinking: bool = False,
              lead: tuple[str, ...] = (), think: tuple[str, str] | None = None, variant: str = "") -> str:
    """The grammar of one call (or, with `parallel`, one or more) in the format's syntax; with `thinking`, after
    the rest of an open thinking block (free text up to `</think>`).

    `lead`: llama-server's required grammar: any text that contains none of these stops (the calls' trigger) may
    come before the calls, and, when the template has thinking markers `think` (or `thinking`), a thinking block
    first (common/chat-auto-parser-generator.cpp: `reasoning? until(trigger)? tool-calls`). `variant`
    "ministral-3": llama.cpp's own parser for Ministral 3 / Devstral (format `magistral` here)."""
    b = Builder(tools)
    if lead and variant == "ministral-3":
        return b.text(_ministral_root(b, parallel))
    if lead and format_name == "kimi-k2":
        return b.text(_kimi_root(b, parallel, thinking))
    if lead and format_name == "qwen3-coder":
        return b.text(_qwen3_coder_root(b, parallel, thinking, think is not None))
    shape = SERVER_SHAPES.get(format_name) if lead else None
    root = shape(b, parallel, lead[0]) if shape else BUILDERS[format_name][1](b, parallel)
    if lead:
        b.rules.update(r.split(" ::= ", 1) for r in until_any("lead-text", lead))
        root = f"lead-text {root}"
        if thinking or think:
            start, end = think or ("<think>", "</think>")
            start = "" if thinking else start
            b.rules.update(r.split(" ::= ", 1) for r in until("thinking", end))
            opening = f"space {lit(start)} " if start else ""
            root = f"({opening}thinking {lit(end)})? {root}"
        return b.text(root)
    if thinking:
        b.rules.update(r.split(" ::= ", 1) for r in until("thinking", "</think>"))
        root = f'thinking "</think>" [ \n]* {root}'
    return b.text(root)
