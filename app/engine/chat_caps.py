"""What a chat template can take, found as llama.cpp finds it: by rendering probe conversations and watching which
inputs the template reads (common/jinja/caps.cpp), and, for templates without a dedicated handler, whether it
supports thinking (the reasoning part of common/chat-diff-analyzer.cpp's differential analysis).

`Render` renders the compiled template with the variables given and raises on any failure. A probe that fails
is a finding, never an error.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

Render = Callable[[dict], str]

_MARKER = "STRING_MARKER"
_ARRAY_USE = {"array_access", "selectattr"}  # what makes llama.cpp read content as typed parts
USER, USER_TWO = "U_USER_MSG Hello END_U", "V_USER_MSG Hello END_V"
ASSISTANT, THINKING = "A_ASST_MSG I can help END_A", "REASON_PART I am thinking END_R"
_C_SPACE = " \t\n\v\f\r"


class Watched(dict):
    """A mapping that notes which keys a template read (by key, .get, or all of them through items/values)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._read: set = set()

    def __getitem__(self, key):
        self._read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._read.add(key)
        return super().get(key, default)

    def items(self):
        self._read.update(self.keys())
        return super().items()

    def values(self):
        self._read.update(self.keys())
        return super().values()


def _looped() -> bool:
    """Whether the iteration under way is a template's own `for` loop (llama.cpp notes those as array access,
    not a filter's walk over the value)."""
    caller = sys._getframe(2).f_code.co_filename
    return caller == "<template>" or caller.endswith(os.path.join("jinja2", "runtime.py"))


class WatchedText(str):
    """Message content that notes being tested as a string or looped over (llama.cpp cannot iterate a string:
    any iteration fails, as a loop over it does in llama.cpp)."""

    def __new__(cls, text: str):
        self = super().__new__(cls, text)
        self.ops = set()
        return self

    def __iter__(self):
        if _looped():
            self.ops.add("array_access")
        raise TypeError("Expected iterable or object type in for loop: got String")

    def __getitem__(self, key):
        if isinstance(key, int):
            self.ops.add("array_access")
        return str.__getitem__(self, key)


class WatchedList(list):
    """Empty typed content that notes being iterated or indexed."""

    def __init__(self):
        super().__init__()
        self.ops: set = set()

    def __iter__(self):
        if _looped():
            self.ops.add("array_access")
        return list.__iter__(self)

    def __getitem__(self, key):
        if isinstance(key, int):
            self.ops.add("array_access")
        return list.__getitem__(self, key)


def noting_selectattr(jinja_filter):
    """The selectattr filter, noting its use on watched content (llama.cpp reads that as typed content)."""
    def selectattr(context, value, *args, **kwargs):
        if isinstance(value, (WatchedText, WatchedList)):
            value.ops.add("selectattr")
        return jinja_filter(context, value, *args, **kwargs)

    selectattr.jinja_pass_arg = jinja_filter.jinja_pass_arg  # type: ignore[attr-defined]
    return selectattr


def note_string_test(value) -> bool:
    """The `is string` test; marks a watched content as having been tested."""
    if isinstance(value, WatchedText):
        value.ops.add("test_is_string")
    return isinstance(value, str)


@dataclass(frozen=True)
class Caps:
    """jinja::caps, the part that changes prompts (defaults as llama.cpp's before any probe)."""

    system_role: bool = True
    string_content: bool = True
    typed_content: bool = False
    tool_calls: bool = True
    object_arguments: bool = False


def _try(render: Render, messages: list, tools: list | None = None) -> str | None:
    try:
        return render({"messages": messages, "tools": tools or [], "bos_token": "", "eos_token": "",
                       "add_generation_prompt": True})
    except Exception:  # a failing probe is a finding: the template refused this shape
        return None


def _tool_probe(arguments) -> tuple[list, Watched, Watched]:
    args = Watched(arguments) if isinstance(arguments, dict) else arguments
    call = Watched(id="call00001", type="function", function={"name": "tool1", "arguments": args})
    assistant = Watched(role="assistant", content="", tool_calls=[call])
    messages = [{"role": "user", "content": "User message"}, assistant,
                {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
                {"role": "assistant", "content": "The tool response was 'tool response'"},
                {"role": "user", "content": "User message"}]
    return messages, assistant, args


_PROBE_TOOLS = [{"name": "tool", "type": "function", "function": {
    "name": "tool1", "description": "Tool description",
    "parameters": {"type": "object", "properties": {"arg": {"type": "string", "description": "Arg description"}},
                   "required": ["arg"]}}}]


def probe_caps(render: Render) -> Caps:
    content = WatchedText(_MARKER)
    out = _try(render, [{"role": "user", "content": content}])
    as_array = bool(_ARRAY_USE & content.ops)
    typed = as_array
    string = out is not None and not (as_array and _MARKER not in out)
    if "test_is_string" in content.ops:
        parts = WatchedList()
        if _try(render, [{"role": "user", "content": parts}]) is not None and _ARRAY_USE & parts.ops:
            typed = True

    system = Watched(role="system", content="System message")
    _try(render, [system, {"role": "user", "content": "User message"}])

    tool_calls, object_args = True, False
    messages, assistant, args = _tool_probe({"arg": "value"})
    if _try(render, messages, _PROBE_TOOLS) is not None:
        if "tool_calls" not in assistant._read:
            tool_calls = False
        elif "arg" in args._read:
            object_args = True
    if tool_calls and not object_args:
        messages, assistant, _ = _tool_probe('{"arg": "value"}')
        if _try(render, messages, _PROBE_TOOLS) is None or "tool_calls" not in assistant._read:
            tool_calls = False
    return Caps(system_role="content" in system._read, string_content=string, typed_content=typed,
                tool_calls=tool_calls, object_arguments=object_args)


# --- thinking support, for templates the autoparser handles ------------------------------------------------

def _segments(text: str) -> list[tuple[str, str]]:
    """segmentize_markers: <...> and [...] runs are markers, the rest text."""
    out, start, opener = [], 0, ""
    for i, ch in enumerate(text):
        if not opener and ch in "<[":
            if start < i:
                out.append(("text", text[start:i]))
            start, opener = i, ch
        elif opener and ch == {"<": ">", "[": "]"}[opener]:
            out.append(("marker", text[start:i + 1]))
            start, opener = i + 1, ""
    if start < len(text):
        out.append(("text", text[start:]))
    return out


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def diff_split(left: str, right: str) -> tuple[str, str]:
    """calculate_diff_split: the parts unique to `left` and to `right`, cut at marker boundaries."""
    L, R = _segments(left), _segments(right)
    if not L or not R:
        return left if not R else "", right if not L else ""
    ls, le, rs, re_ = 0, len(L) - 1, 0, len(R) - 1
    lfull = rfull = False
    while ls != le and rs != re_:
        advanced = False
        if L[ls] == R[rs]:
            ls, rs, advanced = ls + 1, rs + 1, True
        if L[le] == R[re_]:
            if ls != le:
                le -= 1
            else:
                lfull = True
            if rs != re_:
                re_ -= 1
            else:
                rfull = True
            advanced = True
        if not advanced:
            break
    if ls == le and rs != re_:
        if L[ls] == R[re_]:
            re_, lfull = re_ - 1, True
        elif L[ls] == R[rs]:
            rs, lfull = rs + 1, True
    elif rs == re_ and ls != le:
        if L[le] == R[rs]:
            le, rfull = le - 1, True
        elif L[ls] == R[rs]:
            ls, rfull = ls + 1, True
    elif ls == le and rs == re_ and L[ls] == R[rs] and L[ls][0] == "marker":
        lfull = rfull = True
    text_suffix = L[le][0] == "text" and R[re_][0] == "text"
    text_prefix = L[ls][0] == "text" and R[rs][0] == "text"
    rem_l = "".join(v for _, v in L[ls:le if lfull else le + 1])
    rem_r = "".join(v for _, v in R[rs:re_ if rfull else re_ + 1])
    suffix = _common_prefix(rem_l[::-1], rem_r[::-1]) if text_suffix else 0
    prefix = _common_prefix(rem_l[:len(rem_l) - suffix], rem_r[:len(rem_r) - suffix]) if text_prefix else 0
    d_left, d_right = rem_l[prefix:len(rem_l) - suffix], rem_r[prefix:len(rem_r) - suffix]
    if not d_left and d_right and right.startswith(left):
        d_right = right[len(left):]
    return d_left, d_right


_THINKING_THEN_MARKER = re.compile(re.escape(THINKING) + r"[ \t\n\v\f\r]*(<[^>]*>|\[[^\]]*\])")
_WORKAROUNDS = (  # chat-diff-analyzer.cpp's patches that switch reasoning on
    lambda s: "content.split('</think>')" in s and "reasoning_content" not in s and "<SPECIAL_12>" not in s,
    lambda s: "Write your thoughts between <think></think> and write your response between "
              "<response></response>" in s,
    lambda s: all(t in s for t in ("<SPECIAL_10>", "<SPECIAL_11>", "<SPECIAL_12>", "<TOOL_RESPONSE>")),
)


def autoparser_thinks(render: Render, src: str, tool_calls: bool) -> bool:
    """Whether llama.cpp's differential analysis finds a reasoning block in this template."""

    def out(messages, add_generation_prompt=False, thinking=True, tools=None):
        context = {"messages": messages, "bos_token": "", "eos_token": "", "enable_thinking": thinking}
        if tools:
            context["tools"] = tools
        if add_generation_prompt:
            context["add_generation_prompt"] = True
        try:
            return render(context)
        except Exception:  # the analysis skips a step the template refuses
            return None

    user = {"role": "user", "content": USER}
    plain = {"role": "assistant", "content": ASSISTANT}
    reasoned = {**plain, "reasoning_content": THINKING}
    a, b = out([user, plain]), out([user, reasoned])
    if a is not None and b is not None and THINKING in diff_split(a, b)[1] and _THINKING_THEN_MARKER.search(b):
        return True
    a, b = out([user], True, False), out([user], True, True)
    if a is not None and b is not None and _gen_prompt_differs(a, b):
        return True
    if tool_calls:
        args = {"AA_ARG_FST_AA": "VVVV", "BB_ARG_SND_BB": "XXXX"}
        call = {"id": "call00001", "type": "function", "function": {"name": "FFF_FIRST_FUN_F", "arguments": args}}
        schema = {"type": "object", "properties": {
            name: {"type": "string", "description": f"{which} argument"}
            for name, which in (("AA_ARG_FST_AA", "First"), ("BB_ARG_SND_BB", "Second"))}, "required": []}
        tools = [{"type": "function", "function": {"name": name, "description": f"Test function {what}",
                                                   "parameters": schema}}
                 for name, what in (("FFF_FIRST_FUN_F", "foo"), ("SSS_SECOND_FUN_S", "bar"))]
        a = out([user, reasoned], tools=tools)
        b = out([user, {"role": "assistant", "content": None, "reasoning_content": THINKING, "tool_calls": [call]}],
                tools=tools)
        if a is not None and b is not None and THINKING not in a and THINKING in b:
            return True
    return any(w(src) for w in _WORKAROUNDS)


def _gen_prompt_differs(off: str, on: str) -> bool:
    """compare_thinking_enabled: thinking on/off changes the end of the generation prompt by a block."""
    left, right = diff_split(off, on)
    lt, rt = left.strip(_C_SPACE), right.strip(_C_SPACE)
    if not lt and right:
        return bool(rt) and on.endswith(rt)
    if not rt and left:
        return bool(lt) and off.endswith(lt)
    if lt and rt:
        for base, extended in ((on, off), (off, on)):
            anchor = base[-64:]
            at = extended.rfind(anchor)
            if at < 0 or at + len(anchor) >= len(extended):
                continue
            extra = extended[at + len(anchor):].strip(_C_SPACE)
            segs = [s for s in _segments(extra) if s[1].strip(_C_SPACE)]
            if extra and len(segs) == 2 and all(kind == "marker" for kind, _ in segs):
                return True
    return False
