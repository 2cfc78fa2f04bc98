"""The session's MCP servers as the window manages them: which the user has agreed to start, adding, editing and
removing them, starting, stopping and restarting them, and their approval modes. Qt-free; the dialog and the
consent bar are views over it.

A server the user adds or imports here is agreed to as written. One that arrived in a file (a session, an example)
is listed by `needs_consent` with exactly what starting it runs (McpTools.launches: the command line or the URL)
until the user agrees (`agree`); a server whose command line changes is asked about again. What was agreed to is
kept in the window's ConsentLedger (app/session/consent.py), as "NAME: what it runs". Nothing starts a server
nobody agreed to (`start` raises PermissionError).
"""

from __future__ import annotations

import concurrent.futures

from app.mcp import APPROVE, ASK, CRASHED, FAILED, McpConfig, ServerConfig, ServerState, parse_server
from app.mcp import secrets as mcp_secrets
from app.session.consent import MCP, ConsentLedger
from app.session.mcp_calls import McpCalls
from app.session.mcp_tools import McpTools


class ServerList:
    def __init__(self, mcp: McpTools, calls: McpCalls, consent: ConsentLedger):
        self.mcp, self.calls, self.session = mcp, calls, mcp.session
        self.consent = consent  # what the user agreed to start, as "NAME: what it runs"
        self.problems: dict[str, str] = {}  # server name -> why its entry cannot be used

    def names(self) -> list[str]:
        return list(self.session.mcp_servers)

    def launches(self) -> dict[str, str]:
        """Name -> what starting it runs, for the entries that parse (`problems` names the others)."""
        out, self.problems = {}, {}
        for name, entry in self.session.mcp_servers.items():
            parsed = parse_server(name, entry)
            if isinstance(parsed, str):
                self.problems[name] = parsed
            else:
                out[name] = parsed.launch
        return out

    def state(self, name: str) -> ServerState:
        return self.calls.state(name)

    def needs_consent(self) -> list[tuple[str, str]]:
        """(name, what it runs) of each server nobody has agreed to start yet."""
        return [(n, launch) for n, launch in self.launches().items() if not self.consent.agreed(MCP, line(n, launch))]

    def agree(self, names: list[str]) -> list[concurrent.futures.Future]:
        """The user agreed to these servers, as they are configured now: they start."""
        launches = self.launches()
        chosen = [n for n in names if n in launches]
        self.consent.agree(MCP, [line(name, launches[name]) for name in chosen])
        started = [self._start_as_configured(name) for name in chosen]
        self.calls.watch_hub()
        self.calls.changed.emit("")
        return started

    def _start_as_configured(self, name: str) -> concurrent.futures.Future:
        """Start the server as the session configures it now: one the hub knows with another command (a file
        opened since) is stopped and replaced first, so what runs is what the user agreed to."""
        hub = self.mcp.hub
        parsed = parse_server(name, self.session.mcp_servers[name])
        config = mcp_secrets.restore_server(parsed, self.mcp.keys)
        if hub is None or name not in hub.names() or hub.config(name).launch == parsed.launch:
            return self.mcp.start([name])[0]
        out: concurrent.futures.Future = concurrent.futures.Future()

        def replaced(_stopped) -> None:
            hub.set_server(config)
            hub.start(name).add_done_callback(lambda f: out.set_result(f.result()))
        hub.stop(name).add_done_callback(replaced)
        return out

    def _agreed(self, name: str) -> bool:
        launch = self.launches().get(name)
        return launch is not None and self.consent.agreed(MCP, line(name, launch))

    def start(self, name: str) -> concurrent.futures.Future:
        """Start (or, after a failure or a crash, restart) a server the user agreed to."""
        if not self._agreed(name):
            raise PermissionError(f"MCP server {name!r} has not been agreed to: see what it runs first")
        hub = self.mcp.hub
        if self.state(name).status in (FAILED, CRASHED) and hub.config(name).launch == self.launches()[name]:
            return hub.restart(name)
        future = self._start_as_configured(name)
        self.calls.watch_hub()
        return future

    def stop(self, name: str) -> concurrent.futures.Future | None:
        hub = self.mcp.hub
        return hub.stop(name) if hub is not None and name in hub.names() else None

    def set_server(self, name: str, entry: dict, previous: str | None = None) -> ServerConfig:
        """Add or change a server the user wrote or imported here (agreed to as written): its secrets to the
        keyring, the rest to the session. Raises ValueError with the entry's problem, or while it runs."""
        parsed = parse_server(name, entry)
        if isinstance(parsed, str):
            raise ValueError(parsed)
        hub = self.mcp.hub
        if hub is not None and name in hub.names() and self.state(name).running and hub.config(name) != parsed:
            raise ValueError(f"MCP server {name!r} is running: stop it before changing it")
        if previous not in (None, name):
            self.remove_server(previous)
        self.mcp.import_config(McpConfig((parsed,)))
        if hub is not None and name in hub.names() and not self.state(name).running:
            hub.set_server(mcp_secrets.restore_server(parsed, self.mcp.keys))  # the new entry, when it starts
        self.consent.agree(MCP, [line(name, parsed.launch)])
        self.calls.changed.emit("")
        return parsed

    def remove_server(self, name: str) -> None:
        self.stop(name)
        self.session.mcp_servers = {n: e for n, e in self.session.mcp_servers.items() if n != name}
        self.calls.changed.emit("")

    def mode(self, name: str) -> str:
        return self.mcp.policy.mode(name) if name in self.mcp.policy.modes else ASK

    def set_mode(self, name: str, mode: str) -> None:
        """The server's approval mode; calls waiting for approval that it now allows go ahead."""
        self.mcp.policy.set_mode(name, mode)
        tools = {t.name: t for t in (self.mcp.hub.tools([name]) if self.mcp.hub is not None else [])}
        for approval in [a for a in self.mcp.approvals if a.server == name]:
            tool = tools.get(approval.tool)
            if tool is not None and self.mcp.policy.decide(tool) == APPROVE:
                self.mcp.decide(approval, "once")
        self.calls.changed.emit("")


def line(name: str, launch: str) -> str:
    """A server as the user is asked about it, and as their agreement is kept: its name and what it runs."""
    return f"{name}: {launch}"
