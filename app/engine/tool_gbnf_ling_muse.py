"""The tool grammars of Ling 3.0 (common/parsers/ling3.cpp) and Muse Glimmer (common/parsers/muse-glimmer.cpp),
spelled as their handlers' PEG parsers become GBNF (common/peg-parser.cpp `build_grammar`), in Chorus's shape
of a call (gbnf_build.tagged_params: required parameters in order, then each optional one at most once, in
order; the handlers allow any order, Muse's any number: a small model then repeats one forever).

- Ling 3: the trigger rule `ling3-tool-call` is the calls (GLM 4.5's tags), then optional text up to
  `<|role_end|>` and that tag; after the generation prompt, llama-server's required grammar is any text without
  `<tool_call>` (its thinking, open or pre-closed, and content: ling3.cpp `reasoning + content`), the trigger
  rule, and its tail (text up to `<|role_end|>`, the tag).
- Muse Glimmer: a call is the message ` to=RECIPIENT<|message|><atem:function_calls>\\n<atem:invoke
  name="NAME">\\n` parameters `</atem:invoke>\\n</atem:function_calls>`, more after `<|eom|><|start|>assistant`;
  the lazy grammar starts at the ` to=` of a message whose recipient is neither `self` nor `user` (the handler's
  pattern trigger); the required one, after `<|start|>assistant`, allows `to=self` thinking messages first.
  Chorus's call-first grammar writes the recipient as the template does, the function's name.
"""

from __future__ import annotations

from app.engine.gbnf_build import Builder, calls, tagged_params
from app.engine.gbnf_text import lit, until, until_any

LING3_TRIGGER, ROLE_END = "<tool_call>", "<|role_end|>"
MUSE_START, MUSE_EOM = "<|start|>assistant", "<|eom|>"
MUSE_TRIGGER = ("(?:^|<\\|start\\|>assistant)( to=(?!self<\\|message\\|>)(?!user<\\|message\\|>)[^<]*?"
                "<\\|message\\|>)")  # muse-glimmer.cpp's grammar trigger pattern, as it passes it


def _add(b: Builder, rules: list[str]) -> None:
    b.rules.update(r.split(" ::= ", 1) for r in rules)


def ling3_call(b: Builder, parallel: bool, tail: bool = False) -> str:
    """`<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n...</tool_call>`, repeated when
    parallel. Chorus's call-first grammar ends there (`<|role_end|>` may follow); with `tail`, text up to
    `<|role_end|>` may follow too, as in ling3.cpp's `ling3-tool-call` trigger rule (the lazy grammar's)."""
    def tool(n: str, p: dict) -> str:
        params = tagged_params(b, n, p, ("<arg_key>", "</arg_key>\n"), ("<arg_value>", "</arg_value>\n"))
        return f"{lit(LING3_TRIGGER + n + chr(10))} {params} {lit('</tool_call>')}"
    if tail:
        _add(b, until("ling3-tail-text", ROLE_END))
    after = "space ling3-tail-text? " if tail else ""
    return b.rule("tool-call", f"{calls(b.each(tool), parallel, 'space')} {after}{lit(ROLE_END)}?")


def ling3_lazy_call(b: Builder, parallel: bool) -> str:
    """ling3.cpp's trigger rule: the calls, then the turn's optional tail."""
    return ling3_call(b, parallel, tail=True)


def ling3_root(b: Builder, parallel: bool, thinking: bool, think) -> str:
    """After the generation prompt: any text without `<tool_call>`, the calls and their tail, the tail again
    (ling3.cpp: `opener reasoning content tools tail end`)."""
    _add(b, until_any("lead-text", (LING3_TRIGGER,)))
    call = ling3_call(b, parallel, tail=True)
    return f"lead-text {call} ling3-tail-text? {lit(ROLE_END)}?"


def _muse_tool(b: Builder, n: str, p: dict, recipient: str) -> str:
    params = tagged_params(b, n, p, ('<atem:parameter name="', '">'), ("", "</atem:parameter>\n"))
    invoke = lit(f'<atem:invoke name="{n}">')
    head = f'" to=" {recipient} "<|message|><atem:function_calls>\\n" {invoke}'
    return f'{head} "\\n" {params} "</atem:invoke>\\n</atem:function_calls>"'


def _muse_calls(b: Builder, parallel: bool, named: bool) -> str:
    if not named:
        _add(b, until("muse-recipient", "<|message|>"))
    one = b.each(lambda n, p: _muse_tool(b, n, p, lit(n) if named else "muse-recipient"))
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
