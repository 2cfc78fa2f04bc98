"""MCP tools in an evaluation: providers whose `config.mcp` names servers (promptfoo's shape) get those servers'
tools beside their own, and a cell whose reply calls them gets the answers and goes on, up to MAX_ROUNDS rounds.

One evaluation row (a test case and repeat, across its variants) is one replay group: a call with the same server,
tool and arguments runs once for the row and the other variants get the recorded answer, marked replayed. The
cell's `tool_calls` (what `tool-call-f1` and `is-valid-openai-tools-call` score) are every round's calls; its
`tool_results` go into results.json. Nothing here starts a server: `eval --allow-mcp` does (app/cli/eval.py).
"""

from __future__ import annotations

import dataclasses

from app.engine import GenerationRequest
from app.mcp import McpConfig, McpHub, ReplayStore, ToolResult, error_result, parse_config, toolset
from app.mcp import secrets as mcp_secrets
from app.session import tools as tool_defs
from app.session.evaluation import CellResult, Evaluation
from app.session.tool_loop import AUTO_STEPS

MAX_ROUNDS = AUTO_STEPS.default


def servers_of(evaluation: Evaluation) -> McpConfig:
    """Every MCP server the variants name, once each (secrets restored from this process's store)."""
    entries: dict[str, dict] = {}
    for variant in evaluation.variants:
        entries.update((variant.mcp or {}).get("servers", {}))
    return mcp_secrets.restore(parse_config({"mcpServers": entries}), mcp_secrets.process_keys())


@dataclasses.dataclass
class _Waiting:
    cell: CellResult
    request: GenerationRequest
    futures: list


class EvalMcp:
    """The servers of one evaluation run and its cells' tool rounds (driven on the runner's thread)."""

    def __init__(self, evaluation: Evaluation, hub: McpHub):
        self.evaluation, self.hub = evaluation, hub
        self._stores: dict[tuple[int, int], ReplayStore] = {}
        self._sets: dict[int, toolset.ToolSet] = {}
        self._rounds: dict[int, int] = {}  # id(cell) -> rounds answered
        self._calls: dict[int, list[dict]] = {}
        self._waiting: list[_Waiting] = []

    def offer(self) -> None:
        """Each MCP variant's tools: its own, then its servers' (ValueError naming the variant when its
        tool_choice fits none of them)."""
        for index, variant in enumerate(self.evaluation.variants):
            if not variant.mcp:
                continue
            names = list(variant.mcp.get("servers", {}))
            found = toolset.build(self.hub.tools(names), taken=tool_defs.tool_names(variant.tools))
            self._sets[index] = found
            every = list(variant.tools) + found.definitions()
            choice = tool_defs.check_tool_choice(variant.tool_choice, every) if every else "auto"
            variant.tools, variant.tool_choice = every, choice

    def dispatch(self, cell: CellResult, request: GenerationRequest, completion) -> list[dict] | None:
        """After a cell's round: send its calls to their servers (None), or, when the cell is done, the calls of
        every round (its `tool_calls`, what the tool assertions score)."""
        found = self._sets.get(cell.variant)
        key = id(cell)
        if found is None:
            return list(completion.tool_calls)
        calls = [dict(c) for c in completion.tool_calls] if completion.finish_reason == "tool_calls" else []
        self._calls.setdefault(key, []).extend(calls)
        if not calls or self._rounds.get(key, 0) >= MAX_ROUNDS:
            self._rounds.pop(key, None)
            return self._calls.pop(key, [])
        self._rounds[key] = self._rounds.get(key, 0) + 1
        store = self._stores.setdefault((cell.case, cell.repeat), ReplayStore(self.hub))
        timeout = (self.evaluation.variants[cell.variant].mcp or {}).get("timeout_s", 60.0)
        futures = []
        for call in calls:
            tool = found.route(call.get("name", ""))
            if tool is None:
                futures.append(_done(error_result("", call.get("name", ""), call.get("arguments", ""),
                                                  f"{call.get('name')} is not one of the MCP servers' tools",
                                                  call.get("id", ""))))
            else:
                futures.append(store.call(tool.server, tool.name, call.get("arguments", ""), call.get("id", ""),
                                          timeout))
        messages = list(request.messages or ()) + [{"role": "assistant", "content": completion.text or "",
                                                    "tool_calls": [{"id": c.get("id", ""), "type": "function",
                                                                    "function": {"name": c.get("name", ""),
                                                                                 "arguments": c.get("arguments", "")}}
                                                                   for c in calls]}]
        self._waiting.append(_Waiting(cell, dataclasses.replace(request, messages=messages), futures))
        return None

    def ready(self) -> list[tuple[CellResult, GenerationRequest]]:
        """(cell, next request) for every cell whose calls all have their answers."""
        out, still = [], []
        for waiting in self._waiting:
            if not all(f.done() for f in waiting.futures):
                still.append(waiting)
                continue
            answers: list[ToolResult] = [f.result() if not f.cancelled() else error_result(
                "", "", "{}", "the call was cancelled") for f in waiting.futures]
            waiting.cell.tool_results = [*waiting.cell.tool_results, *(a.record() for a in answers)]
            messages = list(waiting.request.messages) + [
                {"role": "tool", "content": a.content, "tool_call_id": a.call_id} for a in answers]
            choice = waiting.request.tool_choice if waiting.request.tool_choice == "none" else "auto"
            out.append((waiting.cell, dataclasses.replace(waiting.request, messages=messages, tool_choice=choice,
                                                          tool_call_first=False)))
        self._waiting = still
        return out

    @property
    def waiting(self) -> bool:
        return bool(self._waiting)

    def cancel(self) -> None:
        for waiting in self._waiting:
            for future in waiting.futures:
                future.cancel()


def _done(result: ToolResult):
    import concurrent.futures
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_result(result)
    return future
