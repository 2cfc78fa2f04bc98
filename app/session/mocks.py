"""Mock results: what a pane answers its model's tool calls with, instead of running any function.

A pane keeps its mocks as the JSON text the user wrote ("" = none), so a mock that does not check yet is kept,
not lost; `parse_mocks` turns the text into `Mock`s or raises MockError naming the tool and field at fault. The
text is one object with a key per tool:

    {"get_weather": {"result": {"temp_c": 18}},                         # a fixed result
     "search": {"cases": [{"when": {"query": "paris"}, "result": ["Paris, France"]},
                          {"when": {"query": "rome"}, "result": ["Rome, Italy"]}],
                "result": []}}                                           # cases, then a default (optional)

A case matches when every key of its `when` equals the call's argument of that name (other arguments are free);
the first case that matches answers, else the tool's own `result`, else the call has no answer. A result that is
a string is sent as it is; anything else as JSON text.

A group of panes may have mock results too (`GroupMocks`, written the same way): they answer the calls of every
pane of the group, except that a pane's own mock for a tool replaces the group's for that tool (whole: cases and
default together). The group's are checked against the tools any of its panes defines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

_NO_DEFAULT = object()


class MockError(ValueError):
    """The mocks cannot be used; the message names the tool and the field."""


@dataclass(frozen=True)
class GroupMocks:
    """A group's mock results as written ("" = none) and the tools its panes define (None: not checked)."""

    text: str = ""
    tool_names: tuple[str, ...] | None = None


NO_GROUP = GroupMocks()


@dataclass(frozen=True)
class Mock:
    cases: tuple[tuple[dict, object], ...] = ()  # (when, result), first match answers
    result: object = _NO_DEFAULT  # the answer when no case matches (a fixed result: no cases)

    def answer(self, arguments: dict) -> str | None:
        """The result text for these arguments, or None when nothing matches."""
        for when, result in self.cases:
            if all(key in arguments and arguments[key] == value for key, value in when.items()):
                return as_text(result)
        return None if self.result is _NO_DEFAULT else as_text(self.result)


def as_text(result) -> str:
    """A result as a tool message's content: a string as it is, anything else as JSON."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def parse_mocks(text: str, tool_names: list[str] | tuple[str, ...] | None = None,
                owner: str = "pane") -> dict[str, Mock]:
    """The mocks in `text` (JSON), checked; "" or blank is none. With `tool_names`, a mock for a tool the
    `owner` ("pane" or "group") does not define is refused too. Raises MockError; a group's messages start
    "group mock results"."""
    if not text.strip():
        return {}
    label = "mock results" if owner == "pane" else f"{owner} mock results"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MockError(f"{label}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise MockError(f"{label}: must be a JSON object with a key per tool, got {type(value).__name__}")
    mocks = {}
    for name, spec in value.items():
        where = f"{label}: {name!r}"
        if tool_names is not None and name not in tool_names:
            listed = ", ".join(tool_names) or f"the {owner} has no tools"
            raise MockError(f"{where} is not one of the {owner}'s tools ({listed})")
        if not isinstance(spec, dict) or not set(spec) <= {"result", "cases"} or not spec:
            raise MockError(f"{where} must be {{\"result\": ...}} and/or {{\"cases\": [{{\"when\": {{...}}, "
                            f"\"result\": ...}}]}}, got {json.dumps(spec)[:80]}")
        cases = spec.get("cases", [])
        if not isinstance(cases, list):
            raise MockError(f"{where}: \"cases\" must be a list of {{\"when\": {{...}}, \"result\": ...}}")
        checked = []
        for i, case in enumerate(cases, 1):
            if not isinstance(case, dict) or set(case) != {"when", "result"} or not isinstance(case["when"], dict):
                raise MockError(f"{where}: case {i} must be {{\"when\": {{argument: value, ...}}, \"result\": ...}}")
            checked.append((case["when"], case["result"]))
        mocks[name] = Mock(tuple(checked), spec.get("result", _NO_DEFAULT))
    return mocks
