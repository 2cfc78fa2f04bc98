"""Extract llama.cpp's parse cases from tests/test-chat.cpp into chat_parse_cases.json (kept, so the data can be
regenerated from a newer llama.cpp): every `tst.test(INPUT)...run();` chain of a `peg_tester` built from a
template file, with its settings and its expected message.

    python tests/engine/data/extract_chat_cases.py PATH/TO/llama.cpp/tests/test-chat.cpp

Only the C++ the chains use is understood: string literals (escaped, raw, adjacent ones joined, `+`-joined), the
test file's message constants and helper functions (simple_assist_msg, message_with_*), tool objects, brace lists,
true/false and enum names, and the local variables a function or block defines before its chains (strings, messages,
tools, field assignments, peg_tester objects), each visible in its own braces only. A chain using anything else is
written with "unread": the reason, and the test reports it.
"""

from __future__ import annotations

import json
import re
import sys
from collections import ChainMap
from pathlib import Path

TOKEN = re.compile(r'''
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<raw>R"(?P<delim>[^(\s]*)\((?P<body>.*?)\)(?P=delim)")
  | (?P<str>"(?:\\.|[^"\\])*")
  | (?P<num>-?\d+(?:\.\d+)?[uUlLfF]*)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_][A-Za-z_0-9]*)*)
  | (?P<op>[(){}\[\],.;=<>&*:+])
''', re.S | re.X)
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def tokens(src: str):
    out = []
    for m in TOKEN.finditer(src):
        kind = m.lastgroup if m.lastgroup != "delim" else "raw"
        if m.group("ws") is not None:
            continue
        if m.group("raw") is not None:
            out.append(("str", m.group("body"), m.start()))
        elif m.group("str") is not None:
            out.append(("str", _unescape(m.group("str")[1:-1]), m.start()))
        else:
            out.append((kind, m.group(0), m.start()))
    return out


def _unescape(raw: str) -> str:
    out, i = [], 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            n = raw[i + 1]
            if n == "u":
                out.append(chr(int(raw[i + 2:i + 6], 16)))
                i += 6
                continue
            if n == "x":
                m = re.match(r"[0-9a-fA-F]+", raw[i + 2:])
                out.append(chr(int(m.group(0), 16)))
                i += 2 + len(m.group(0))
                continue
            out.append(ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Unread(Exception):
    pass


class Reader:
    def __init__(self, toks, env):
        self.t, self.i, self.env = toks, 0, env

    def peek(self, k=0):
        return self.t[self.i + k][:2] if self.i + k < len(self.t) else ("eof", "")

    def take(self, value=None):
        tok = self.peek()
        if value is not None and tok[1] != value:
            raise Unread(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def expr(self):
        value = self.primary()
        while self.peek()[1] == "+":  # std::string concatenation
            self.take()
            more = self.primary()
            if not (isinstance(value, str) and isinstance(more, str)):
                raise Unread("+ of non-strings")
            value += more
        return value

    def primary(self):
        kind, value = self.peek()
        if kind == "str":
            parts = []
            while self.peek()[0] == "str":
                parts.append(self.take()[1])
            return "".join(parts)
        if kind == "num":
            self.take()
            return int(re.sub(r"[uUlLfF]", "", value)) if "." not in value else float(value)
        if value == "{":
            self.take()
            items = []
            while self.peek()[1] != "}":
                items.append(self.expr())
                if self.peek()[1] == ",":
                    self.take()
            self.take("}")
            return items
        if kind == "name":
            self.take()
            if value in ("true", "false"):
                return value == "true"
            if value.startswith("std::") and self.peek()[1] == "(":  # std::string("...")
                self.take("(")
                v = self.expr()
                self.take(")")
                return v
            if self.peek()[1] == "(":
                self.take("(")
                args = []
                while self.peek()[1] != ")":
                    args.append(self.expr())
                    if self.peek()[1] == ",":
                        self.take()
                self.take(")")
                return call(value, args)
            if self.peek()[1] == "{":  # Type{...}
                return self.expr()
            if value in self.env:
                return self.env[value]
            if value.isupper() or value.startswith("COMMON_"):
                return value
            raise Unread(f"unknown name {value}")
        raise Unread(f"unexpected {value!r}")


def msg(content="", reasoning="", name="", args="", call_id=""):
    calls = [{"name": name, "arguments": args, "id": call_id}] if name or call_id else []
    return {"content": content, "reasoning_content": reasoning, "tool_calls": calls}


def call(fn, args):
    if fn == "simple_assist_msg":
        return msg(*args)
    if fn == "message_with_tool_calls":
        return msg("", "", *args)
    if fn in ("message_with_tool_calls_and_reasoning",):
        return msg("", args[2], args[0], args[1])
    if fn == "message_with_content_and_tool_call":
        return msg(args[0], "", args[1], args[2])
    if fn == "message_with_reasoning_and_tool_call":
        return msg("", args[0], args[1], args[2])
    if fn == "message_with_reasoning_content_and_multiple_tool_calls":
        return {"content": args[1], "reasoning_content": args[0],
                "tool_calls": [{"name": n, "arguments": a, "id": ""} for n, a in args[2]]}
    raise Unread(f"unknown function {fn}")


def definitions(src: str, toks) -> dict:
    """The file's tool objects and message constants, read in order."""
    env = {}
    for m in re.finditer(r"^(?:static |const )*(?:const )?common_chat_(tool|msg) (\w+)\s*(=|\{)", src, re.M):
        kind, name = m.group(1), m.group(2)
        start = m.end() - 1 if m.group(3) == "{" else m.end()
        reader = Reader(tokens(src[start:start + 20000]), env)
        try:
            value = _typed(kind, reader.expr())
        except Unread:
            continue
        if value is not None:
            env[name] = value
    return env


def _typed(kind: str, value):
    """A `common_chat_<kind>` initialiser's value as a tool or message dict (None if it is neither)."""
    if kind == "tool" and isinstance(value, list):
        return {"name": value[0], "description": value[1], "parameters": json.loads(value[2] or "{}")}
    if kind == "msg" and isinstance(value, dict):
        return value
    if kind == "msg" and isinstance(value, list):  # {role, content, ...}: a prompt message
        return {"role": value[0], "content": value[1]}
    if kind == "" and not isinstance(value, list):
        return value
    return None


TYPES = {"auto": "", "char": "", "std::string": "", "common_chat_msg": "msg", "common_chat_tool": "tool"}


class Tester:
    """A `peg_tester` local: the templates its chains run on."""

    def __init__(self, templates: list[str]):
        self.templates = templates


def _declaration(src: str, toks, i: int, scope) -> int | None:
    """Reads a local `[static] [const] TYPE [const] [*] NAME (= EXPR | {...} | );` at token i into scope; returns
    the index after it, or None when there is none (or its value cannot be read)."""
    j = i
    while toks[j][1] in ("static", "const"):
        j += 1
    if toks[j][1] not in TYPES:
        return None
    kind = TYPES[toks[j][1]]
    j += 1
    while toks[j][1] in ("const", "*"):
        j += 1
    if toks[j][0] != "name" or toks[j + 1][1] not in ("=", "{", ";"):
        return None
    name, how = toks[j][1], toks[j + 1][1]
    if how == ";":
        if kind != "msg":
            return None
        scope[name] = {"role": "", **msg()}
        return j + 2
    start = j + 2 if how == "=" else j + 1
    if toks[start][1] == "peg_tester" and toks[start + 1][1] == "(":
        arg = toks[start + 2]
        scope[name] = Tester([arg[1]] if arg[0] == "str" else _looped(src, arg[2], arg[1]))
        return start
    reader = Reader(toks, scope)
    reader.i = start
    try:
        value = _typed(kind, reader.expr())
        reader.take(";")
    except (Unread, IndexError):
        return None
    if value is None:
        return None
    scope[name] = value
    return reader.i


def _assignment(toks, i: int, scope) -> int | None:
    """Reads `NAME.field = EXPR;` into a local message or tool; returns the index after it, or None."""
    target = scope.get(toks[i][1])
    if not isinstance(target, dict) or toks[i + 1][1] != "." or toks[i + 3][1] != "=":
        return None
    reader = Reader(toks, scope)
    reader.i = i + 4
    try:
        value = reader.expr()
        reader.take(";")
    except (Unread, IndexError):
        return None
    scope.maps[0][toks[i][1]] = {**target, toks[i + 2][1]: value}
    return reader.i


def _looped(src: str, at: int, var: str) -> list[str]:
    """The templates a `for (... var : {"a", "b"})` loop (or, for a helper's parameter, its callers' loop)
    gives `var` at source offset `at`."""
    loops = list(re.finditer(r"for \([^:;]*\b" + var + r"\s*:\s*\{([^}]*)\}", src[:at]))
    if loops:
        return re.findall(r'"([^"]+)"', loops[-1].group(1))
    helper = re.findall(r"static void (\w+)\([^)]*\b" + var + r"\b", src[:at])
    if helper:
        m = re.search(r"for \([^:;]*\b(\w+)\s*:\s*\{([^}]*)\}\)\s*\{\s*" + helper[-1] + r"\(", src)
        if m:
            return re.findall(r'"([^"]+)"', m.group(2))
    return []


def chains(src: str, env: dict):
    toks = tokens(src)
    scope = ChainMap({}, env)
    i = 0
    while i < len(toks):
        kind, value, at = toks[i]
        if value == "{":
            scope = scope.new_child()
        elif value == "}":
            scope = scope.parents if len(scope.maps) > 2 else scope
        elif kind == "name" and (i == 0 or toks[i - 1][1] in (";", "{", "}")):
            after = _declaration(src, toks, i, scope) or _assignment(toks, i, scope)
            if after is not None:
                i = after
                continue
        tester = scope.get(value) if kind == "name" else None
        if isinstance(tester, Tester) and toks[i + 1][1] == "." and toks[i + 2][1] == "test":
            line = src.count("\n", 0, at) + 1
            reader = Reader(toks, scope)
            reader.i = i + 3
            case = {"templates": tester.templates, "params": {}, "expect": msg()}
            try:
                reader.take("(")
                case["input"] = reader.expr()
                reader.take(")")
                while reader.peek()[1] == ".":
                    reader.take(".")
                    method = reader.take()[1]
                    reader.take("(")
                    args = []
                    while reader.peek()[1] != ")":
                        args.append(reader.expr())
                        if reader.peek()[1] == ",":
                            reader.take()
                    reader.take(")")
                    apply(case, method, args)
            except (Unread, IndexError) as exc:
                case["unread"] = str(exc)
                while reader.i < len(toks) and toks[reader.i][1] != ";":
                    reader.i += 1
            case["line"] = line
            yield case
            i = reader.i
        i += 1


def apply(case, method, args):
    params, expect = case["params"], case["expect"]
    if method == "run":
        return
    if method == "expect":
        case["expect"] = dict(args[0])
    elif method == "expect_content":
        expect["content"] = args[0]
    elif method == "expect_reasoning":
        expect["reasoning_content"] = args[0]
    elif method == "expect_tool_calls":
        expect["tool_calls"] = [{"name": c[0], "arguments": c[1],
                                 "id": c[2] if len(c) > 2 and isinstance(c[2], str) else ""} for c in args[0]]
    elif method == "tools":
        params["tools"] = [t if isinstance(t, dict) else
                           {"name": t[0], "description": t[1], "parameters": json.loads(t[2] or "{}")} for t in args[0]]
    elif method == "messages":  # the conversation: only its last message matters here (a prefill to continue)
        params["messages"] = "custom"
        last = args[0][-1] if args and args[0] else None
        if isinstance(last, dict) and "content" in last and last.get("role") in (None, "", "assistant"):
            params["prefill"] = {"content": last.get("content", ""),
                                 "reasoning_content": last.get("reasoning_content", "")}
    elif method == "expect_reconstruction":
        pass
    elif method in ("reasoning_format", "enable_thinking", "parallel_tool_calls", "add_generation_prompt",
                    "is_partial", "tool_choice", "json_schema", "continue_final_message"):
        params[method] = args[0] if args else True
    else:
        raise Unread(f"unknown method {method}")


def main(path: str) -> None:
    src = Path(path).read_text()
    env = definitions(src, None)
    cases = list(chains(src, env))
    out = Path(__file__).with_name("chat_parse_cases.json")
    out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases ({sum('unread' in c for c in cases)} unread) -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
