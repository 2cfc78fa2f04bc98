"""The tool grammars of Ling 3.0 (common/parsers/ling3.cpp) and Muse Glimmer (common/parsers/muse-glimmer.cpp).
The lazy ("auto") and required grammars are spelled as their handlers' PEG parsers become GBNF
(common/peg-parser.cpp `build_grammar`, as llama-server reports them); the call-first grammar is Chorus's shape
of a call as the template writes it (build.tagged_params: required parameters in order, then each optional
one at most once, in order; the handlers allow any order, Muse's any number: a small model then repeats one).

- Ling 3: the trigger rule `ling3-tool-call` is the calls (GLM 4.5's tags), then optional text up to
  `<|role_end|>` and that tag; after the generation prompt, llama-server's required grammar is any text without
  `<tool_call>` (its thinking, open or pre-closed, and content: ling3.cpp `reasoning + content`), the trigger
  rule, and its tail (text up to `<|role_end|>`, the tag). Chorus's call-first grammar has no text after the call.
- Muse Glimmer: a call is the message ` to=RECIPIENT<|message|><atem:function_calls>\\n<atem:invoke
  name="NAME">\\n` parameters `</atem:invoke>\\n</atem:function_calls>`, more after `<|eom|><|start|>assistant`;
  the lazy grammar starts at the ` to=` of a message whose recipient is neither `self` nor `user` (the handler's
  pattern trigger); the required one, after `<|start|>assistant`, allows `to=self` thinking messages first.
  Chorus's call-first grammar writes the recipient as the template does, the function's name.
"""

from __future__ import annotations

from app.engine.chat.grammar.build import Builder, calls, tagged_params
from app.engine.chat.grammar.text import lit, through, until, until_any
from app.engine.chat.parse.minimax_m3 import may_be_string

LING3_TRIGGER, ROLE_END = "<tool_call>", "<|role_end|>"
MUSE_START, MUSE_EOM = "<|start|>assistant", "<|eom|>"
MUSE_TRIGGER = ("(?:^|<\\|start\\|>assistant)( to=(?!self<\\|message\\|>)(?!user<\\|message\\|>)[^<]*?"
                "<\\|message\\|>)")  # muse-glimmer.cpp's grammar trigger pattern, as it passes it


def _add(b: Builder, rules: list[str]) -> None:
    b.rules.update(r.split(" ::= ", 1) for r in rules)


def ling3_call(b: Builder, parallel: bool) -> str:
    """Chorus's call-first grammar: `<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n...
    </tool_call>`, repeated when parallel, then `<|role_end|>` or the end (no text after it)."""
    def tool(n: str, p: dict) -> str:
        params = tagged_params(b, n, p, ("<arg_key>", "</arg_key>\n"), ("<arg_value>", "</arg_value>\n"))
        return f"{lit(LING3_TRIGGER + n + chr(10))} {params} {lit('</tool_call>')}"
    return b.rule("tool-call", f"{calls(b.each(tool), parallel, 'space')} {lit(ROLE_END)}?")


def _only_string(schema: dict) -> bool:
    kind = schema.get("type")
    if kind == "string" or kind == ["string"]:
        return True
    return kind is None and bool(schema.get("enum")) and all(isinstance(v, str) for v in schema["enum"])


def _ling3_value(b: Builder, n: str, k: str, schema: dict) -> str:
    """ling3.cpp's value: raw text for a string, JSON of the schema otherwise, JSON or raw text for a union."""
    if _only_string(schema):
        return "ling3-arg-string"
    json_value = f'{b.schema(schema, f"ling3-arg-{n}-{k}-schema")} "</arg_value>"'
    return f"({json_value} | ling3-arg-string)" if may_be_string(schema) else json_value


def ling3_lazy_call(b: Builder, parallel: bool) -> str:
    """ling3.cpp's trigger rule `ling3-tool-call` as its grammar has it: per argument `space?` before it and
    between key and value, required arguments in any order (its `permute`), then optional ones in any order and
    number, `space?` around the name and the close; the calls, then the turn's optional tail."""
    _add(b, [*until("ling3-arg-string-text", "</arg_value>"), *until("ling3-tail-text", ROLE_END)])
    b.rules["ling3-arg-string"] = 'ling3-arg-string-text "</arg_value>"'

    def tool(n: str, p: dict) -> str:
        props = p.get("properties") or {}
        args = {k: b.rule(f"ling3-arg-{n}-{k}", f'space? ("<arg_key>" {lit(k)} "</arg_key>") space? "<arg_value>" '
                          f"{_ling3_value(b, n, k, v if isinstance(v, dict) else {})}") for k, v in props.items()}
        required = [args[k] for k in props if k in (p.get("required") or ())]
        optional = [args[k] for k in props if k not in (p.get("required") or ())]
        body = _permute(b, f"ling3-{n}-args", required)
        if optional:
            body = f"{body} ({' | '.join(optional)})*"
        return f"({lit(LING3_TRIGGER)} {lit(n)} space?) ({body}) (space? {lit('</tool_call>')})"
    one = b.each(tool)
    return b.rule("tool-call", f"{calls(one, parallel, 'space')} space ling3-tail-text? {lit(ROLE_END)}?")


def _permute(b: Builder, prefix: str, parts: list[str]) -> str:
    """chat-peg-parser.cpp `permute`: the parts in any order (in sequence past COMMON_CHAT_MAX_PERMUTE = 6)."""
    if not parts:
        return '""'
    if len(parts) == 1 or len(parts) > 6:
        return " ".join(parts)

    def rest(mask: int) -> str:
        alts = [f"{parts[i]} {rest(mask & ~(1 << i))}" if mask & ~(1 << i) else parts[i]
                for i in range(len(parts)) if mask & (1 << i)]
        return b.rule(f"{prefix}-{mask}", " | ".join(alts))
    return rest((1 << len(parts)) - 1)


def ling3_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """After the generation prompt: any text without `<tool_call>`, the calls and their tail, the tail again
    (ling3.cpp: `opener reasoning content tools tail end`)."""
    _add(b, until_any("lead-text", (LING3_TRIGGER,)))
    call = ling3_lazy_call(b, parallel)
    return f"lead-text {call} ling3-tail-text? {lit(ROLE_END)}?"


def _muse_tool(b: Builder, n: str, p: dict, recipient: str) -> str:
    params = tagged_params(b, n, p, ('<atem:parameter name="', '">'), ("", "</atem:parameter>\n"))
    invoke = lit(f'<atem:invoke name="{n}">')
    head = f'" to=" {recipient} "<|message|><atem:function_calls>\\n" {invoke}'
    return f'{head} "\\n" {params} "</atem:invoke>\\n</atem:function_calls>"'


def _muse_server_tool(b: Builder, n: str, p: dict) -> str:
    """muse-glimmer.cpp's call as its grammar has it: any recipient, `space`s around the tags (its `<<`), the
    parameters in any order and number, a string one's text through its closing tag (its `ac`)."""
    through_close = "muse-string"
    _add(b, through(through_close, "</atem:parameter>"))
    props = p.get("properties") or {}

    def arg(k: str, v: dict) -> str:
        value = through_close if may_be_string(v) else f'{b.schema(v, f"tool-{n}-arg-{k}-schema")} "</atem:parameter>"'
        return f'("<atem:parameter name=\\"" {lit(k)} "\\">") {value}'
    args = f"(({' | '.join(arg(k, v if isinstance(v, dict) else {}) for k, v in props.items())}) space)*" \
        if props else '""'
    invoke = f'"<atem:invoke name=\\"" {lit(n)} "\\">"'
    return (f'(" to=" muse-recipient "<|message|><atem:function_calls>" space {invoke} space) space {args} space '
            f'("</atem:invoke>" space "</atem:function_calls>")')


def _muse_calls(b: Builder, parallel: bool, named: bool) -> str:
    if not named:
        _add(b, until("muse-recipient", "<|message|>"))
    one = b.each(lambda n, p: _muse_tool(b, n, p, lit(n)) if named else _muse_server_tool(b, n, p))
    more = f" ({lit(MUSE_EOM + MUSE_START)} {one})*" if parallel else ""
    return b.rule("tool-call", f"{one}{more}")


def muse_call(b: Builder, parallel: bool) -> str:
    """Chorus's call-first grammar: the call messages, each to the function's own name."""
    return _muse_calls(b, parallel, named=True)


def muse_lazy_call(b: Builder, parallel: bool) -> str:
    """muse-glimmer.cpp's trigger rule, from the trigger's ` to=` on: any recipient up to `<|message|>`."""
    return _muse_calls(b, parallel, named=False)


def muse_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """After `<|start|>assistant`: thinking messages (` to=self<|message|>...<|eom|><|start|>assistant`), then
    the calls (the handler's required parser: `(start analysis)* start tool-calls`)."""
    _add(b, until("muse-analysis-text", MUSE_EOM))
    b.rule("muse-analysis", f'" to=self<|message|>" muse-analysis-text {lit(MUSE_EOM + MUSE_START)}')
    return f"muse-analysis* {muse_lazy_call(b, parallel)}"
