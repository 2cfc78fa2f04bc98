"""The MCP tools a pane offers, as function definitions beside its JSON-defined ones, and which server answers
each function name.

A tool keeps its own name unless another chosen tool has it already (a JSON-defined one, or one from another
server): then it is offered as `SERVER_TOOL` (cut to the 64 characters OpenAI allows). `ToolSet.route(name)` gives
the McpTool a parsed call goes to (None: not an MCP tool, e.g. a mocked one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.mcp.results import McpTool

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class ToolSet:
    """Function name -> the MCP tool it calls, in the order offered."""

    routes: dict[str, McpTool] = field(default_factory=dict)

    def definitions(self) -> list[dict]:
        return [tool.definition(name) for name, tool in self.routes.items()]

    def route(self, function_name: str) -> McpTool | None:
        return self.routes.get(function_name)

    def servers(self) -> list[str]:
        return list(dict.fromkeys(t.server for t in self.routes.values()))


def build(tools: list[McpTool], taken: tuple[str, ...] | list[str] = (),
          only: dict[str, set[str] | None] | None = None) -> ToolSet:
    """The tools as functions. `taken`: names already used (the pane's JSON-defined tools). `only`: server -> the
    tool names chosen (None: all its tools); servers not in it are left out (None: every tool given)."""
    used = set(taken)
    routes: dict[str, McpTool] = {}
    for tool in tools:
        if only is not None and (tool.server not in only or (only[tool.server] is not None
                                                               and tool.name not in only[tool.server])):
            continue
        name = _safe(tool.name)
        if name in used:
            name = _safe(f"{tool.server}_{tool.name}")
        base, n = name, 2
        while name in used:
            name = f"{base[:60]}_{n}"
            n += 1
        used.add(name)
        routes[name] = tool
    return ToolSet(routes)


def split_entry(entry: str, servers=()) -> tuple[str, str]:
    """A choice's (server, tool); tool "" for the whole server. A server's name may hold "/" itself
    ("team/files"): the longest of `servers` (the names known) that the entry is, or starts with followed by
    "/", is its server; an entry matching none splits at its first "/"."""
    known = sorted((s for s in servers if entry == s or entry.startswith(s + "/")), key=len, reverse=True)
    if known:
        return known[0], entry[len(known[0]) + 1:]
    server, _, tool = entry.partition("/")
    return server, tool


def chosen(entries, servers=()) -> dict[str, set[str] | None]:
    """A pane's or a line's choice ("server" for all its tools, "server/tool" for one) as `build`'s `only`;
    `servers`: the server names known (see `split_entry`)."""
    only: dict[str, set[str] | None] = {}
    for entry in entries:
        server, tool = split_entry(entry, servers)
        if not tool:
            only[server] = None
        elif only.get(server, set()) is not None:
            only.setdefault(server, set()).add(tool)
    return only


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name)[:64] or "tool"
