"""Reading the calls of one reply, for the marker-described kinds of app.engine.chat.parse.types.Format
("json", "tag_json", "tagged", "pythonic"): llama.cpp's generated PEG parsers for those shapes
(common/chat-auto-parser-generator.cpp), as plain scanning.

Each reader takes the text and the index where a call's body starts, and returns (call or None, index after the
body, finished). An unfinished call (the text ended inside it) is reported once its name is complete, with the
arguments seen so far: a prefix of its final arguments.
"""

from __future__ import annotations

import ast
import json

from app.engine.chat.parse import pythonic
from app.engine.chat.parse.scan import find_marker, loads, object_fields, partial_tail, skip_ws, value_end
from app.engine.chat.parse.types import Format, ToolCall, offered_parameters

FAIL = (None, -1, False)


def json_call(text: str, j: int, fmt: Format, tools, partial: bool = False) -> tuple[ToolCall | None, int, bool]:
    """A JSON object call: {"name": ..., "arguments": {...}} (keys per `fmt`), or {"<name>": {...}}. While the
    reply streams (`partial`), a field after the arguments other than a call id still to come fails, as
    llama.cpp's parser (its fields in the template's order, the arguments last) fails at that comma."""
    if j >= len(text):
        return None, j, False
    if text[j] != "{":
        return FAIL
    fields, end, ok = object_fields(text, j)
    if not ok:
        return FAIL
    if fmt.name_is_key:
        if not fields:
            return (None, end, True) if end is not None else (None, len(text), False)
        name, (a, b) = next(iter(fields.items()))
        args = text[a:len(text) if b is None else b]
        return ToolCall("", name, args), len(text) if end is None else end, end is not None
    span = fields.get(fmt.name_key)
    if span is None or span[1] is None:
        return (FAIL if end is not None else (None, len(text), False))
    name = loads(text[span[0]:span[1]])
    if not isinstance(name, str):
        return FAIL
    call_id = ""
    if fmt.id_key and fmt.id_key in fields and fields[fmt.id_key][1] is not None:
        value = loads(text[fields[fmt.id_key][0]:fields[fmt.id_key][1]])
        call_id = value if isinstance(value, str) else json.dumps(value)
    args = ""
    if fmt.args_key in fields:
        a, b = fields[fmt.args_key]
        after = skip_ws(text, b) if b is not None else len(text)
        before = list(fields)[:list(fields).index(fmt.args_key)]
        if partial and text[after:after + 1] == "," and not (fmt.id_key and fmt.id_key not in before):
            return FAIL
        args = text[a:len(text) if b is None else b]
        if b is not None and args.startswith('"'):  # arguments written as a JSON string holding the object
            inner = loads(args)
            args = inner if isinstance(inner, str) else args
    elif end is not None:
        args = "{}"
    if end is None:  # named: llama.cpp's mapper starts the arguments at "{" (chat-peg-parser.cpp, tool name)
        return ToolCall(call_id, name, args or "{"), len(text), False
    if loads(args) is None:
        return FAIL
    return ToolCall(call_id, name, args), end, True


def tag_json_call(text: str, j: int, fmt: Format, tools) -> tuple[ToolCall | None, int, bool]:
    """NAME, then `name_suffix`, then JSON arguments (optionally in a ```json fence)."""
    at, complete = find_marker(text, fmt.name_suffix, j, partial=True)
    if at < 0 or not complete:
        return (None, len(text), False) if "\n" not in text[j:] or fmt.name_suffix == "\n" else FAIL
    name, call_id = text[j:at].strip(), ""
    if fmt.extra.get("id_marker") and fmt.extra["id_marker"] in name:
        name, call_id = name.split(fmt.extra["id_marker"], 1)
    if fmt.id_suffix and fmt.id_suffix in name:  # Kimi: functions.NAME:IDX, the whole being the id
        call_id = fmt.extra.get("id_prefix", "") + name
        name = name[:name.rfind(fmt.id_suffix)]
    if not name or any(c in name for c in " \n{<"):
        return FAIL
    k = skip_ws(text, at + len(fmt.name_suffix))
    fence = fmt.extra.get("fence")
    if fence and text.startswith(fence, k):
        k = skip_ws(text, k + len(fence))
    elif fence and fence.startswith(text[k:]):
        return ToolCall(call_id, name, ""), len(text), False
    if k >= len(text):
        return ToolCall(call_id, name, ""), len(text), False
    if text[k] != "{":
        return FAIL
    end = value_end(text, k)
    if end is None:
        return ToolCall(call_id, name, text[k:]), len(text), False
    args = text[k:end]
    if loads(args) is None:
        return FAIL
    if fence:
        after = skip_ws(text, end)
        if text.startswith("```", after):
            end = after + 3
        elif "```".startswith(text[after:]):
            return ToolCall(call_id, name, args), len(text), False
    return ToolCall(call_id, name, args), end, True


def _param_types(tools, name: str) -> dict:
    parameters = offered_parameters(tools, name) or {}
    return {k: (v or {}).get("type") for k, v in (parameters.get("properties") or {}).items()}


def _expected(tools, name: str):
    """Whether the tool's next tagged parameter may be `key` after those `seen`, as llama.cpp's parser for it
    takes them: each required one once, first, in any order, then optional ones (None: a tool not offered, any
    key)."""
    parameters = offered_parameters(tools, name)
    if parameters is None or not parameters.get("properties"):
        return None
    required = {k for k in parameters.get("required") or () if k in parameters["properties"]}
    optional = set(parameters["properties"]) - required

    def expected(seen: list[str], key: str) -> bool:
        missing = required - set(seen)
        return key in missing if missing else key in optional
    return expected


def _key(key: str) -> str:
    """`"key":`, as llama.cpp's mapper writes a tagged argument's name (compact, UTF-8 kept)."""
    return json.dumps(key, ensure_ascii=False) + ":"


def _value(raw: str, kind) -> str:
    """A tagged parameter's value as JSON text: a string unless the schema (or, without one, the text) says
    it is another JSON value, which is kept as written (llama.cpp copies the value's text)."""
    if kind != "string":
        value = loads(raw.strip())
        if value is not None or raw.strip() == "null":
            return raw.strip()
    return json.dumps(raw, ensure_ascii=False)


def _lined(fmt: Format) -> tuple[str, str]:
    """(after key, after value) as llama.cpp's parser for the format requires them: Qwen3-Coder's
    (common/parsers/qwen3-coder.cpp) opens a value with `>\n` and ends it only at `\n</parameter>\n`."""
    _, after_key, after_value = fmt.param
    return (after_key + "\n", "\n" + after_value + "\n") if fmt.extra.get("lined") else (after_key, after_value)


def tagged_call(text: str, j: int, fmt: Format, tools) -> tuple[ToolCall | None, int, bool]:
    """NAME, then parameters written as `param[0]` KEY `param[1]` VALUE `param[2]`. While a string value streams,
    it is shown open (no closing quote) up to a tail that may begin its end marker, as llama.cpp's mapper shows it
    (the closing quote comes with the whole end marker: its tool_arg_close is atomic).

    With `extra["atomic_open"]` (Hy3: no name suffix but an arguments separator, here `name_suffix`), llama.cpp
    reads a call's opening atomically (chat-auto-parser-generator.cpp build_func_parser): an offered tool with
    required parameters shows once its name, the separator and the first parameter's opening tag are complete
    (that tag must follow); one without any shows only when its call is whole."""
    call, k, finished = _tagged_call(text, j, fmt, tools)
    params = offered_parameters(tools, call.name) if call is not None and fmt.extra.get("atomic_open") else None
    if params is None:
        return call, k, finished
    if not set(params.get("required") or ()) & set(params.get("properties") or {}):
        return (call, k, True) if finished else (None, len(text), False)
    sep = text.find(fmt.name_suffix, j)
    after = skip_ws(text, sep + len(fmt.name_suffix))
    if sep < 0 or text[j:sep].strip() != call.name:
        return FAIL
    if text.startswith(fmt.param[0], after):
        return call, k, finished
    return (None, len(text), False) if not finished and fmt.param[0].startswith(text[after:]) else FAIL


def _tagged_call(text: str, j: int, fmt: Format, tools) -> tuple[ToolCall | None, int, bool]:
    before = fmt.param[0]
    after_key, after_value = _lined(fmt)
    ends = [m for m in (fmt.name_suffix, before, fmt.call[1]) if m]
    hits = [(text.find(m, j), m) for m in ends if text.find(m, j) >= 0]
    if not hits:
        return None, len(text), False
    at, marker = min(hits)
    name = text[j:at].strip()
    if not name or any(c in name for c in " \n<>{"):
        return FAIL
    k = at + len(marker) if marker == fmt.name_suffix else at
    types, parts, expected, seen = _param_types(tools, name), [], _expected(tools, name), []
    close, value_prefix = fmt.extra.get("close", ""), fmt.extra.get("value_prefix", "")
    while True:
        k = skip_ws(text, k)
        if not text.startswith(before, k):
            rest = text[k:]
            if not rest or any(len(rest) < len(m) and m.startswith(rest) for m in (before, close, fmt.call[1])):
                return ToolCall("", name, "{" + ",".join(parts)), len(text), False
            break
        key_end, ok = find_marker(text, after_key, k + len(before), partial=True)
        if key_end < 0 or not ok:
            return ToolCall("", name, "{" + ",".join(parts)), len(text), False
        key = text[k + len(before):key_end].strip()
        if expected is not None and not expected(seen, key):  # llama.cpp's parse fails here: while the reply
            return ToolCall("", name, "{" + ",".join(parts)), len(text), False  # streams, the call so far
        seen.append(key)
        v0 = key_end + len(after_key)
        if value_prefix:
            v0 = skip_ws(text, v0)
            if not text.startswith(value_prefix, v0):
                return (ToolCall("", name, "{" + ",".join(parts)), len(text), False) \
                    if value_prefix.startswith(text[v0:]) else FAIL
            v0 += len(value_prefix)
        v1 = text.find(after_value, v0)
        if v1 < 0:
            shown = parts
            if types.get(key) == "string":
                raw = held(text[v0:], (after_value,))
                shown = [*parts, _key(key) + json.dumps(raw, ensure_ascii=False)[:-1]]
            return ToolCall("", name, "{" + ",".join(shown)), len(text), False
        parts.append(_key(key) + _value(text[v0:v1], types.get(key)))
        k = v1 + len(after_value)
    if close:
        c = skip_ws(text, k)
        if text.startswith(close, c):
            k = c + len(close)
        elif close.startswith(text[c:]):
            return ToolCall("", name, "{" + ",".join(parts)), len(text), False
    return ToolCall("", name, "{" + ",".join(parts) + "}"), k, True


def pythonic_calls(text: str, j: int, partial: bool, tools=()) -> tuple[list[ToolCall], int, bool]:
    """[name(key=value, ...), ...] as Python, read with `ast` once the list is complete; while it is not, the
    calls begun so far with their arguments as llama.cpp's partial parse writes them (pythonic.py)."""
    close = _list_end(text, j)
    if close is None:
        if not partial:
            return [], -1, False
        return pythonic.open_calls(text, j, tools), len(text), False
    try:
        tree = ast.parse(text[j:close].strip(), mode="eval").body
        calls = []
        for node in (tree.elts if isinstance(tree, ast.List) else [tree]):
            if not isinstance(node, ast.Call):
                return [], -1, False
            args = {kw.arg: _literal(kw.value) for kw in node.keywords}
            arguments = json.dumps(args, ensure_ascii=False, separators=(",", ":"))  # compact, as llama.cpp's
            calls.append(ToolCall("", ast.unparse(node.func), arguments))
        written = pythonic.open_calls(text[:close], j)  # llama.cpp's mapper keeps each value's text as written
        if len(written) == len(calls) and all(loads(c.arguments) is not None for c in written):
            calls = [ToolCall("", c.name, w.arguments) for c, w in zip(calls, written, strict=True)]
        return calls, close, True
    except (SyntaxError, ValueError):
        return [], -1, False


_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _literal(node):
    """A Python literal, JSON's true/false/null allowed too (LFM2 writes both)."""
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    return ast.literal_eval(node)


def _list_end(text: str, j: int) -> int | None:
    depth = 0
    for k, c in pythonic.unquoted(text, j):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth == 0:
                return k + 1
    return None


def held(text: str, markers) -> str:
    """`text` without a tail that may still become one of `markers`."""
    k = partial_tail(text, markers)
    return text[:len(text) - k] if k else text
