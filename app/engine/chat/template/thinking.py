"""Whether a chat template without a dedicated handler supports thinking, found as llama.cpp finds it: the
reasoning part of common/chat-diff-analyzer.cpp's differential analysis (render probe conversations that differ
in reasoning, in `enable_thinking` or by a tool call, and look for the reasoning or a block of markers in the
difference), plus its workarounds for known templates. A probe the template refuses is skipped, never an error.
"""

from __future__ import annotations

import re

from app.engine.chat.template.caps import Render

USER, USER_TWO = "U_USER_MSG Hello END_U", "V_USER_MSG Hello END_V"
ASSISTANT, THINKING = "A_ASST_MSG I can help END_A", "REASON_PART I am thinking END_R"
_C_SPACE = " \t\n\v\f\r"


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
