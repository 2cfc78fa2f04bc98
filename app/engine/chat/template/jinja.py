"""A sandboxed Jinja2 environment that behaves like llama.cpp's own Jinja engine (common/jinja) where chat
templates notice the difference.

Reproduced: trim_blocks and lstrip_blocks on, one trailing newline dropped; the globals llama.cpp defines
(raise_exception, strftime_now, range, dict, namespace, tojson) and no others; `tojson` as llama.cpp writes it
(keys in insertion order, ", " and ": " separators, non-ASCII kept unless ensure_ascii, C++ float format);
`default` also replacing None; None or undefined joined to a string with `+` counting as ""; `{{ x }}` printing
nothing for None, undefined and mappings; strings offering only the methods llama.cpp implements, with its
`split()` (on a single space) and ASCII-only strip; `{% generation %}` blocks; break and continue; lists
that the template can append to or pop from (they are this render's own copies).

The sandbox holds: no loader, no filesystem or network access, no attribute starting with an underscore, and
no mutation of dicts or sets; lists can be appended to and popped (ChatTemplate hands each render its own
copies).
"""

from __future__ import annotations

import math
import re
from datetime import datetime

from jinja2 import ChainableUndefined, nodes
from jinja2.compiler import CodeGenerator
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

_C_SPACE = " \t\n\v\f\r"  # C isspace(): llama.cpp strips these, Python's str.strip() more
_UNDEFINED_METHODS = {  # llama.cpp's builtins on an undefined value: each returns an empty value
    **dict.fromkeys(("capitalize", "join", "lower", "replace", "safe", "string", "strip", "title", "truncate",
                     "upper"), ""),
    **dict.fromkeys(("items", "list", "map", "reject", "rejectattr", "reverse", "select", "selectattr", "sort",
                     "unique"), ()),
    **dict.fromkeys(("length", "sum", "wordcount"), 0),
}
_NONE_METHODS = frozenset(("items", "map", "reject", "rejectattr", "select", "selectattr", "unique"))


class TemplateRaised(Exception):
    """The template called raise_exception(message)."""


def float_text(x: float) -> str:
    """A float as llama.cpp prints it: std::to_string, trailing zeros dropped, one kept after the point."""
    if math.isinf(x) or math.isnan(x):
        return ("-" if x < 0 else "") + ("inf" if math.isinf(x) else "nan")
    text = f"{x:f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def text_of(value) -> str:
    """llama.cpp's as_string(): what `+`/`~` concatenate and `{{ }}` prints for scalars."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, ChainableUndefined):
        return ""
    return str(value)


def joined(left, right) -> str:
    """`+` or `~` with a string on one side: None or undefined on the other counts as "" (llama.cpp's
    workaround), anything else as its text."""
    nullish = (type(None), ChainableUndefined)
    if isinstance(left, nullish) and isinstance(right, str):
        return right
    if isinstance(right, nullish) and isinstance(left, str):
        return left
    return text_of(left) + text_of(right)


def printed(value) -> str:
    """What `{{ value }}` writes: strings and numbers, arrays item by item, nothing for None/undefined/maps."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return text_of(value)
    if isinstance(value, (list, tuple)):
        return "".join(printed(item) for item in value)
    return ""


def _json_string(s: str, ensure_ascii: bool) -> str:
    s, out = str(s), ['"']
    for ch in s:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\b\f\n\r\t":
            out.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        elif ensure_ascii and code > 0x7F:
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def to_json(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False) -> str:
    """The `tojson` filter and global, as llama.cpp's value_to_json writes it (not Python's json.dumps)."""
    if sort_keys:
        raise ValueError("tojson sort_keys=true not implemented")  # llama.cpp refuses it too
    step = indent if isinstance(indent, int) and not isinstance(indent, bool) else -1
    seps = list(separators) if isinstance(separators, (list, tuple)) else []
    item_sep = seps[0] if seps else (", " if step < 0 else ",")
    key_sep = seps[1] if len(seps) > 1 else ": "
    newline = "\n" if step >= 0 else ""

    def write(v, level: int) -> str:
        if v is None or isinstance(v, ChainableUndefined):
            return "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return f"{v:g}"
        if isinstance(v, str):
            return _json_string(v, ensure_ascii)
        if isinstance(v, Namespace):
            v = dict(v._Namespace__attrs)  # type: ignore[attr-defined]
        if isinstance(v, (list, tuple, dict)):
            pairs = list(v.items()) if isinstance(v, dict) else [(None, x) for x in list(v[:])]
            if not pairs:
                return "[]" if not isinstance(v, dict) else "{}"
            pad, inner = " " * (level * step) if step > 0 else "", " " * step if step > 0 else ""
            parts = []
            for key, item in pairs:
                head = "" if key is None else _json_string(text_of(key), ensure_ascii) + key_sep
                parts.append(pad + inner + head + write(item, level + 1))
            body = (item_sep + newline).join(parts)
            return ("{" if isinstance(v, dict) else "[") + newline + body + newline + pad + (
                "}" if isinstance(v, dict) else "]")
        return "null"

    return write(value, 0)


def _default(value, default_value="", boolean=False):
    missing = not value if boolean else (value is None or isinstance(value, ChainableUndefined))
    return default_value if missing else value


def _split(s: str, sep: str | None = None, maxsplit: int = -1) -> list[str]:
    if sep == "":
        raise ValueError("empty separator")
    return s.split(" " if sep is None else sep, maxsplit)


def _rsplit(s: str, sep: str | None = None, maxsplit: int = -1) -> list[str]:
    if sep == "":
        raise ValueError("empty separator")
    return s.rsplit(" " if sep is None else sep, maxsplit)


_STRING_METHODS = {  # the string methods llama.cpp implements, with its semantics
    "upper": str.upper, "lower": str.lower, "title": str.title, "capitalize": str.capitalize,
    "startswith": str.startswith, "endswith": str.endswith, "replace": str.replace, "format": None,
    "strip": lambda s, chars=None: s.strip(_C_SPACE if chars is None else chars),
    "lstrip": lambda s, chars=None: s.lstrip(_C_SPACE if chars is None else chars),
    "rstrip": lambda s, chars=None: s.rstrip(_C_SPACE if chars is None else chars),
    "split": _split, "rsplit": _rsplit,
}


def _listing(jinja_filter):
    """A Jinja2 filter that returns an iterator, returning a list instead (so `|length`, `|tojson` work)."""
    def listed(*args, **kwargs):
        out = jinja_filter(*args, **kwargs)
        return out if isinstance(out, str) else list(out)

    for attr in ("jinja_pass_arg",):  # keep pass_context / pass_environment
        if hasattr(jinja_filter, attr):
            setattr(listed, attr, getattr(jinja_filter, attr))
    return listed


class LlamaUndefined(ChainableUndefined):
    """Undefined as llama.cpp has it: prints as "", chains, and its few builtins return empty values."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name in _UNDEFINED_METHODS:
            empty = _UNDEFINED_METHODS[name]
            return lambda *args, **kwargs: list(empty) if isinstance(empty, tuple) else empty
        return super().__getattr__(name)


class _Generation(Extension):
    """`{% generation %}...{% endgeneration %}` (HF's assistant-mask marker): renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        next(parser.stream)
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body)


class _CodeGenerator(CodeGenerator):
    def visit_Concat(self, node, frame) -> None:  # `~` goes through LlamaEnvironment.tilde
        self.write("environment.tilde((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class LlamaEnvironment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset(["+"])
    code_generator_class = _CodeGenerator

    def __init__(self):
        super().__init__(trim_blocks=True, lstrip_blocks=True, autoescape=False, undefined=LlamaUndefined,
                         finalize=printed, extensions=["jinja2.ext.loopcontrols", _Generation])
        self.globals.clear()
        self.globals.update(raise_exception=_raise, strftime_now=lambda fmt: c_strftime(datetime.now(), fmt),
                            range=range, dict=dict, namespace=Namespace, tojson=to_json)
        self.filters.update(tojson=to_json, default=_default, d=_default,
                            trim=lambda s, chars=None: text_of(s).strip(_C_SPACE if chars is None else chars))
        for name in ("map", "select", "reject", "selectattr", "rejectattr", "reverse", "unique", "items"):
            self.filters[name] = _listing(self.filters[name])  # llama.cpp's filters give arrays, not generators

    def call_binop(self, context, operator, left, right):
        if isinstance(left, str) or isinstance(right, str):
            return joined(left, right)
        return super().call_binop(context, operator, left, right)

    @staticmethod
    def tilde(values) -> str:
        """`a ~ b ~ c`, left to right as llama.cpp evaluates it."""
        out = values[0]
        for value in values[1:]:
            out = joined(out, value)
        return text_of(out)

    def is_safe_attribute(self, obj, attr, value) -> bool:
        if isinstance(obj, list) and attr in ("append", "pop"):  # llama.cpp's arrays have both
            return True
        return super().is_safe_attribute(obj, attr, value)

    def getattr(self, obj, attribute):
        if isinstance(obj, str) and not isinstance(obj, ChainableUndefined):
            if attribute not in _STRING_METHODS:
                return self.undefined(obj=obj, name=attribute)
            method = _STRING_METHODS[attribute]
            if method is None:
                return super().getattr(obj, attribute)  # format: the sandbox's own safe str.format
            return lambda *args, **kwargs: method(obj, *args, **kwargs)
        if obj is None and attribute in _NONE_METHODS:  # llama.cpp's none.items() and friends are empty
            return lambda *args, **kwargs: []
        return super().getattr(obj, attribute)


_C_NAMES = {
    "a": "Mon Tue Wed Thu Fri Sat Sun".split(), "A": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
    "b": "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(),
    "B": "January February March April May June July August September October November December".split(),
}


def c_strftime(now: datetime, fmt: str) -> str:
    """strftime in the C locale (llama-server never sets one; a Qt app does), whatever this process's locale."""
    def name(match: re.Match) -> str:
        code = match.group(1)
        if code in "aA":
            return _C_NAMES[code][now.weekday()]
        if code in "bBh":
            return _C_NAMES["b" if code == "h" else code][now.month - 1]
        if code == "p":
            return "AM" if now.hour < 12 else "PM"
        return match.group(0)

    return now.strftime(re.sub(r"%([aAbBhp%])", name, fmt))


def _raise(message) -> None:
    raise TemplateRaised(text_of(message))
