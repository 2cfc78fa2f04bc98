"""DeepSeek V3.2 / V4's DSML calls (llama.cpp's common/parsers/deepseek.cpp, common_chat_params_init_deepseek_v3_2).
A reply's calls are one block (V3.2 names it `function_calls`, V4 `tool_calls`; D = `｜DSML｜`):

    <D function_calls>\\n<D invoke name="NAME">\\n<D parameter name="K" string="true">V</D parameter>\\n
    </D invoke>\\n</D function_calls>

A parameter whose schema may be a string (`may_be_string`) is written `string="true"` with its value as raw text
up to `</D parameter>`; any other `string="false"` with a JSON value. For an offered tool the parameters are taken
as llama.cpp's parser takes them: the required ones first in schema order, then optional ones in any order, each
with the `string` flag its schema gives (anything else fails the call). The arguments are written as its mapper
writes them, compactly (`{"city":"Tokyo"}`); while a value streams, a string is shown without its closing quote
(that comes with the whole `</D parameter>`) and the closing brace comes with `</D invoke>`, so a partial
translation is a prefix of the final one. Content before the block ends before a `\\n\\n` that precedes it, as
its `until_one_of` ends it.
"""

from __future__ import annotations

import json

from app.engine.chat.parse.minimax_m3 import may_be_string
from app.engine.chat.parse.scan import loads, partial_tail, skip_ws
from app.engine.chat.parse.types import ToolCall, offered_parameters

D = "｜DSML｜"
INVOKE_START, NAME_END, INVOKE_END = f'<{D}invoke name="', '">\n', f"</{D}invoke>"
PARAM_START, PARAM_END = f'<{D}parameter name="', f"</{D}parameter>"
SEPARATOR = "\n\n"  # the text before the block ends before it (TC_SEPARATOR)


def block(name: str) -> tuple[str, str]:
    """(start, end) of the calls' block: `function_calls` (V3.2) or `tool_calls` (V4)."""
    return f"<{D}{name}>", f"</{D}{name}>"


class _More(Exception):
    """The text ended inside the call; `json` is the translation so far."""

    def __init__(self, json_text: str):
        super().__init__(json_text)
        self.json = json_text


class _Fail(Exception):
    """The text is not this format's call (llama.cpp's parse fails there)."""


def _literal(text: str, k: int, literal: str, so_far: str) -> int:
    if text.startswith(literal, k):
        return k + len(literal)
    if literal.startswith(text[k:]):
        raise _More(so_far)
    raise _Fail


def _string(raw: str) -> str:
    return json.dumps(raw, ensure_ascii=False)[1:-1]


def _parameter(text: str, k: int, properties: dict | None, allowed, out: str, sep: str) -> tuple[str, int]:
    """(`"key":value`, index after `</D parameter>`) of the parameter at text[k] (at PARAM_START). `allowed` is
    the keys llama.cpp's parser takes here (None: any, a tool not offered); `out` the JSON so far, `sep` what
    comes before this member in it."""
    k = _literal(text, k, PARAM_START, out)
    quote = text.find('"', k)
    if quote < 0:
        if allowed is None or any(p.startswith(text[k:]) for p in allowed):
            raise _More(out)
        raise _Fail
    key = text[k:quote]
    if allowed is not None and key not in allowed:
        raise _Fail
    head = out + sep + json.dumps(key, ensure_ascii=False) + ":"
    flag_at = _literal(text, quote, '" string="', head)
    flag_end = text.find('">', flag_at)
    flag = text[flag_at:] if flag_end < 0 else text[flag_at:flag_end]
    wanted = ("true" if may_be_string(properties.get(key) or {}) else "false") if properties is not None else None
    if flag_end < 0:
        if any((f + '">').startswith(flag) for f in ((wanted,) if wanted else ("true", "false"))):
            raise _More(head)
        raise _Fail
    if flag not in ("true", "false") or (wanted and flag != wanted):
        raise _Fail
    v0 = flag_end + 2
    at = text.find(PARAM_END, v0)
    if at < 0:
        body = text[v0:]
        body = body[:len(body) - partial_tail(body, (PARAM_END,))]
        raise _More(head + ('"' + _string(body) if flag == "true" else body))
    value = text[v0:at]
    if flag == "true":
        return head[len(out) + len(sep):] + '"' + _string(value) + '"', at + len(PARAM_END)
    if loads(value) is None:
        raise _Fail
    return head[len(out) + len(sep):] + value, at + len(PARAM_END)


def call(text: str, j: int, fmt, tools) -> tuple[ToolCall | None, int, bool]:
    """`NAME">\\n` parameters `</D invoke>` at text[j] (after `<D invoke name="`): (call, index after
    `</D invoke>`, finished). The call is reported once its name is complete. A function that is not offered
    (llama.cpp's parse fails there) is read with any parameters, each by its `string` flag."""
    at = text.find('"', j)
    if at < 0:
        name = text[j:]
        return (None, len(text), False) if not any(c in name for c in '\n<>') else (None, -1, False)
    name, schema = text[j:at], offered_parameters(tools, text[j:at])
    if not name or any(c in name for c in '\n<>'):
        return None, -1, False
    properties = None if schema is None else {k: v if isinstance(v, dict) else {}
                                              for k, v in (schema.get("properties") or {}).items()}
    required = [p for p in properties or () if p in (schema.get("required") or ())]
    optional = [p for p in properties or () if p not in required]
    parts: list[str] = []
    try:
        k = _literal(text, at, NAME_END, "{")
        while True:
            so_far, first_required = "{" + ",".join(parts), not parts and bool(required)
            start = k if first_required else skip_ws(text, k)  # the first required one comes right after NAME_END
            rest = text[start:]
            if not rest.startswith(PARAM_START):
                if not rest or PARAM_START.startswith(rest):
                    raise _More(so_far)
                if len(parts) < len(required):
                    raise _Fail
                break
            allowed = None if properties is None else (required[len(parts):len(parts) + 1] or optional)
            part, k = _parameter(text, start, properties, allowed, so_far, "," if parts else "")
            parts.append(part)
        end = _literal(text, skip_ws(text, k), INVOKE_END, "{" + ",".join(parts))
    except _More as more:
        return ToolCall("", name, more.json), len(text), False
    except _Fail:
        return None, -1, False
    return ToolCall("", name, "{" + ",".join(parts) + "}"), end, True


