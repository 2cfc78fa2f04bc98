"""What a chat template can take, found as llama.cpp finds it: by rendering probe conversations and watching which
inputs the template reads (common/jinja/caps.cpp). Whether a template without a dedicated handler supports
thinking is thinking.py's, which renders through the same `Render`.

`Render` renders the compiled template with the variables given and raises on any failure. A probe that fails
is a finding, never an error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

Render = Callable[[dict], str]

_MARKER = "STRING_MARKER"
_ARRAY_USE = {"array_access", "selectattr"}  # what makes llama.cpp read content as typed parts


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
    parallel_tool_calls: bool = True  # what llama-server allows when a request leaves parallel_tool_calls out


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
                tool_calls=tool_calls, object_arguments=object_args,
                parallel_tool_calls=_reads_second_call(render, {"arg": "value"} if object_args else '{"arg": "value"}'))


def _reads_second_call(render: Render, arguments) -> bool:
    """caps.cpp's parallel tool calls check: an assistant message with two calls renders, and the template reads
    the second call's `function`."""
    messages, assistant, _ = _tool_probe(arguments)
    second = Watched(id="call00002", type="function", function={"name": "tool1", "arguments": arguments})
    assistant["tool_calls"] = [*assistant["tool_calls"], second]
    return _try(render, messages, _PROBE_TOOLS) is not None and "function" in second._read
