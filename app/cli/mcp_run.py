"""`run --mcp MCP.json --allow-mcp`: lines with `"mcp": true | [NAME, ...]` get the servers' tools, and their
calls are answered by the servers, round after round (up to the line's `"max_tool_rounds"`, default 3).

One `run` is one replay group: a call with the same server, tool and arguments runs once and every other line
gets the recorded result, marked `replayed` (`--mcp-live`: every call runs). A line waiting on its tools holds no
slot: its request has ended, the others decode, and its next round is submitted once every call has its answer.
Calls the policy does not approve (`--mcp-approve`; "ask" has nobody to ask here, so it denies) get an error
result the model sees. A line's result carries every round's `tool_calls` and `tool_results`
(`[{"call_id", "server", "tool", "content", "is_error", "replayed"}]`).
"""

from __future__ import annotations

import dataclasses

from app.cli.inputs import RunItem
from app.engine import GenerationRequest
from app.mcp import (
    APPROVE,
    ApprovalPolicy,
    McpConfig,
    McpHub,
    ReplayStore,
    ToolResult,
    denied_result,
    error_result,
    toolset,
)
from app.session import tools as tool_defs


@dataclasses.dataclass
class _Line:
    """One line's tool loop: its messages so far, the calls and results of every round, what it waits on."""

    messages: list[dict]
    tools: toolset.ToolSet
    rounds_left: int
    calls: list[dict] = dataclasses.field(default_factory=list)
    results: list[ToolResult] = dataclasses.field(default_factory=list)
    waiting: list = dataclasses.field(default_factory=list)  # futures of this round's calls
    rounds: int = 0


class McpRun:
    """The servers of one `run`, started together, and each line's tool loop."""

    def __init__(self, config: McpConfig, policy: ApprovalPolicy, live: bool, timeout_s: float):
        self.hub = McpHub(config)
        self.policy, self.timeout_s = policy, timeout_s
        self.store = ReplayStore(self.hub, live=live)
        self.lines: dict[int, _Line] = {}  # by the item's line number

    def start(self) -> list[str]:
        """Start every server; the sentences of those that failed (with their stderr tails)."""
        problems = []
        for state in self.hub.start_all():
            if not state.running:
                tail = f" (stderr: {state.stderr_tail.splitlines()[-1]})" if state.stderr_tail else ""
                problems.append(state.message + tail)
        return problems

    def close(self) -> None:
        self.hub.close()

    def prepare(self, item: RunItem) -> RunItem:
        """The item with the MCP tools of its servers added to its request (an error item if it names a server
        the file lacks, or its tools cannot be offered)."""
        if not item.mcp or item.request is None:
            return item
        only = toolset.chosen(self.hub.names() if item.mcp is True else item.mcp, self.hub.names())
        unknown = [n for n in only if n not in self.hub.names()]
        if unknown:
            return dataclasses.replace(item, request=None, error=f"line {item.line}: mcp names "
                                       f"{', '.join(unknown)}, not in the MCP file ({', '.join(self.hub.names())})")
        request = item.request
        own = list(request.tools or ())
        found = toolset.build(self.hub.tools(only), taken=tool_defs.tool_names(own), only=only)
        every = own + found.definitions()
        try:
            choice = tool_defs.check_tool_choice(item.tool_choice or request.tool_choice or "auto", every) \
                if every else "auto"
        except tool_defs.ToolsError as exc:
            return dataclasses.replace(item, request=None, error=f"line {item.line}: {exc}")
        fields = {"tools": tuple(every), "tool_choice": choice} if every else {}
        request = dataclasses.replace(request, **fields)
        self.lines[item.line] = _Line(list(request.messages or ()), found, item.max_tool_rounds)
        return dataclasses.replace(item, request=request)

    def dispatch(self, item: RunItem, result) -> bool:
        """After a line's round ended: send its calls (True), or False when the line is done."""
        line = self.lines.get(item.line)
        if line is None or result.finish_reason != "tool_calls" or not result.tool_calls:
            return False
        calls = [dict(c) for c in result.tool_calls]
        line.calls += calls
        if line.rounds_left <= 0:
            return False
        line.rounds_left -= 1
        line.rounds += 1
        line.messages.append({"role": "assistant", "content": result.text or "", "tool_calls": [
            {"id": c.get("id", ""), "type": "function", "function": {"name": c.get("name", ""),
                                                                     "arguments": c.get("arguments", "")}}
            for c in calls]})
        line.waiting = [self._answer(line, c) for c in calls]
        return True

    def _answer(self, line: _Line, call: dict):
        from concurrent.futures import Future
        name, call_id, arguments = call.get("name", ""), call.get("id", ""), call.get("arguments", "")
        tool = line.tools.route(name)
        if tool is None:
            answer = error_result("", name, arguments, f"{name} is not a tool of the line's MCP servers", call_id)
        elif self.policy.decide(tool, headless=True) != APPROVE:
            answer = denied_result(tool.server, tool.name, arguments, call_id,
                                   f"MCP server {tool.server!r} needs approval ({self.policy.mode(tool.server)})"
                                   " and nobody can approve a headless run")
        else:
            return self.store.call(tool.server, tool.name, arguments, call_id, self.timeout_s)
        done: Future = Future()
        done.set_result(answer)
        return done

    def ready(self) -> list[tuple[int, GenerationRequest]]:
        """(line, next request) for every line whose calls have all been answered."""
        out = []
        for number, line in self.lines.items():
            if line.waiting and all(f.done() for f in line.waiting):
                answers = [_result_of(f) for f in line.waiting]
                line.waiting = []
                line.results += answers
                line.messages += [{"role": "tool", "content": a.content, "tool_call_id": a.call_id}
                                  for a in answers]
                out.append((number, line.messages))
        return out

    def waiting(self) -> int:
        return sum(1 for line in self.lines.values() if line.waiting)

    def record(self, item: RunItem, record: dict) -> dict:
        """A result line with the tool loop's calls and results."""
        line = self.lines.pop(item.line, None)
        if line is None:
            return record
        if line.calls:
            record["tool_calls"] = line.calls
        record["tool_results"] = [r.record() for r in line.results]
        record["tool_rounds"] = line.rounds
        return record

    def cancel(self) -> None:
        for line in self.lines.values():
            for future in line.waiting:
                future.cancel()


def _result_of(future) -> ToolResult:
    if future.cancelled():
        return error_result("", "", "{}", "the call was cancelled")
    return future.result()


def next_request(request: GenerationRequest, messages: list[dict]) -> GenerationRequest:
    """The line's request for its next round: the conversation with the results, tool_choice back to auto (the
    model may answer with what it learned, as the window's auto-continue does: tools.turn_choice)."""
    choice = request.tool_choice if request.tool_choice == "none" else "auto"
    return dataclasses.replace(request, messages=[dict(m) for m in messages], tool_choice=choice,
                               tool_call_first=False)
