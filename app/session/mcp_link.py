"""The session's MCP servers as the window uses them, Qt-free: the servers the session names (started only once the
user has agreed to what they run), the tools each pane offers from them, and each call's progress.

`McpLink` holds one McpHub (app/mcp) for the session's `mcp_servers`. A server the user added or imported in this
window is agreed to when added; one that arrived in a file (a session, an example) is listed in `needs_consent`
with its exact command line or URL and starts only after `consent`. A pane's `mcp` names servers ("files") or single
tools ("files/read"); `toolset(pane)` gives the functions the pane offers beside its JSON-defined ones, following
each server's tool list as it changes.

Calls: `start_calls(pane)` takes the pane's pending calls that go to a server. Each is asked about (`ASKING`,
the server's approval mode says when: app/mcp/approvals.py) or sent at once through the session's ReplayStore, so
a call with the same server, tool and arguments runs once and every other pane gets the recorded result, marked
replayed (`pane.mcp_live`, or `live` for the whole session, sends every call). The futures complete on the hub's
thread; their outcomes wait in an inbox until the owning thread's `pump()` applies them (`notify`, given by the
owner, wakes it), so the session only ever changes on one thread. Recorded answers go into the session
(`mcp_records`), so a reopened or regenerated pane replays them. `changed` is emitted with a pane's id when its
calls changed ("" when the servers did), `answered` with the pane once none of its calls is pending.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections import deque
from dataclasses import dataclass, replace

from psygnal import Signal

from app.mcp import (
    APPROVE,
    ASK,
    DEFAULT_TIMEOUT_S,
    ApprovalPolicy,
    McpConfig,
    McpHub,
    McpTool,
    ReplayStore,
    ServerConfig,
    ServerState,
    ToolResult,
    denied_result,
    parse_server,
    toolset,
)
from app.mcp import secrets as mcp_secrets
from app.session import tool_loop
from app.session import tools as tool_defs
from app.session.state import PaneSpec, SessionModel
from app.session.tool_cards import NO_SERVERS, ServerAnswers

ASKING, RUNNING, DONE, ERROR, TIMED_OUT, CANCELLED, DENIED = (
    "waiting for approval", "running", "done", "error", "timed out", "cancelled", "denied")
PENDING = (ASKING, RUNNING)


@dataclass(frozen=True)
class CallState:
    """One call of a pane to a server: what it asked, where it stands, and the answer once it has one."""

    call_id: str
    function: str  # the name the model called
    server: str
    tool: str
    arguments: str  # as the model wrote them
    status: str = RUNNING
    content: str = ""  # the tool turn's text (a result, or the error the model sees)
    replayed: bool = False

    @property
    def pending(self) -> bool:
        return self.status in PENDING


def status_of(result: ToolResult) -> str:
    if not result.is_error:
        return DONE
    return TIMED_OUT if " did not answer within " in result.content else ERROR


class McpLink:
    changed = Signal(str)
    """A pane's calls changed (its id), or the servers or their tools did ("")."""
    answered = Signal(object)
    """None of the pane's calls is pending any more (the PaneSpec): its tool turns can be given."""

    def __init__(self, session: SessionModel, keys=None, notify=lambda: None, hub: McpHub | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S):
        """`keys`: the KeyStore that holds the servers' secrets; `notify()`: wakes the owning thread to `pump()`
        (called from the hub's thread)."""
        self.session, self.keys, self.notify, self.timeout_s = session, keys, notify, timeout_s
        self.hub = hub or McpHub(())
        self.live = False  # every call of every pane goes to its server
        self.policy = ApprovalPolicy()
        self.consented: set[tuple[str, str]] = set()  # (name, launch) the user agreed to start
        self.calls: dict[str, dict[str, CallState]] = {}  # pane id -> call id -> its state
        self._futures: dict[tuple[str, str], concurrent.futures.Future] = {}
        self._inbox: deque = deque()
        self._lock = threading.Lock()
        self.store = ReplayStore(self.hub, records=list(session.mcp_records))
        self.problems: dict[str, str] = {}  # server name -> why its entry cannot be used
        self.hub.changed.connect(self._hub_changed)
        self.sync_servers()

    # ---- servers ----------------------------------------------------------------------------------------------
    def configs(self) -> list[ServerConfig]:
        """The session's servers that parse (with their secrets from the keyring); `problems` names the others."""
        out, self.problems = [], {}
        for name, entry in self.session.mcp_servers.items():
            parsed = parse_server(name, entry)
            if isinstance(parsed, str):
                self.problems[name] = parsed
            else:
                out.append(mcp_secrets.restore_server(parsed, self.keys) if self.keys is not None else parsed)
        return out

    def sync_servers(self) -> None:
        """Give the hub the session's servers (a stopped one whose entry changed is replaced)."""
        names = set(self.hub.names())
        for config in self.configs():
            if config.name not in names or (self.hub.config(config.name) != config
                                            and not self.hub.state(config.name).running):
                try:
                    self.hub.set_server(config)
                except ValueError:
                    pass  # running: replaced once it stops

    def reload(self) -> None:
        """The session's content was replaced (New, Open): its servers are listed again, none agreed to; the
        recorded answers are the new session's."""
        for name in self.hub.names():
            if name not in self.session.mcp_servers or not self._agreed(name):
                self.hub.stop(name)
        self.consented = {(n, launch) for n, launch in self.consented if n in self.session.mcp_servers}
        self.calls.clear()
        self.store = ReplayStore(self.hub, records=list(self.session.mcp_records))
        self.sync_servers()
        self.changed.emit("")

    def names(self) -> list[str]:
        return list(self.session.mcp_servers)

    def state(self, name: str) -> ServerState:
        try:
            return self.hub.state(name)
        except KeyError:
            return ServerState(name, "", "failed", self.problems.get(name, "not configured"))

    def _agreed(self, name: str) -> bool:
        try:
            launch = self.hub.config(name).launch
        except KeyError:
            return False
        return (name, launch) in self.consented

    def needs_consent(self) -> list[ServerConfig]:
        """The session's servers nobody has agreed to start yet, with what they would run (`launch`)."""
        return [c for c in self.configs() if (c.name, c.launch) not in self.consented]

    def consent(self, names: list[str] | None = None, start: bool = True) -> None:
        """The user agreed to these servers (all that wait by default), as they are configured now; started."""
        chosen = [c for c in self.configs() if names is None or c.name in names]
        for config in chosen:
            self.consented.add((config.name, config.launch))
        self.sync_servers()
        if start:
            for config in chosen:
                self.hub.start(config.name)
        self.changed.emit("")

    def set_server(self, name: str, entry: dict, previous: str | None = None) -> ServerConfig:
        """Add or change a server the user wrote here (agreed to as written): its secrets to the keyring, the
        entry (without them) to the session. Raises ValueError with the entry's problem, or while it runs."""
        parsed = parse_server(name, entry)
        if isinstance(parsed, str):
            raise ValueError(parsed)
        if previous is not None and previous != name and previous in self.session.mcp_servers:
            self.remove_server(previous)
        if name in self.hub.names() and self.hub.state(name).running and self.hub.config(name) != parsed:
            raise ValueError(f"MCP server {name!r} is running: stop it before changing it")
        if self.keys is not None:
            mcp_secrets.stash(McpConfig((parsed,)), self.keys)
        self.session.mcp_servers = {**self.session.mcp_servers, name: mcp_secrets.blank_entries({name: entry})[name]}
        self.consented.add((name, parsed.launch))
        self.sync_servers()
        self.changed.emit("")
        return parsed

    def remove_server(self, name: str) -> None:
        if name in self.hub.names():
            self.hub.stop(name)
        self.session.mcp_servers = {n: e for n, e in self.session.mcp_servers.items() if n != name}
        self.changed.emit("")

    def start(self, name: str) -> concurrent.futures.Future:
        """Start (or restart, after a failure or a crash) a server the user agreed to; raises PermissionError
        for one nobody agreed to."""
        if not self._agreed(name):
            raise PermissionError(f"MCP server {name!r} has not been agreed to: see what it runs first")
        return self.hub.restart(name) if self.hub.state(name).status in ("failed", "crashed") \
            else self.hub.start(name)

    def stop(self, name: str) -> concurrent.futures.Future:
        return self.hub.stop(name)

    def close(self) -> None:
        for future in list(self._futures.values()):
            future.cancel()
        self.hub.close()

    # ---- tools ------------------------------------------------------------------------------------------------
    def tools(self, server: str | None = None) -> list[McpTool]:
        """The tools the running servers list (one server's, or all)."""
        names = [n for n in self.names() if server is None or n == server]
        return self.hub.tools(n for n in names if n in self.hub.names())

    def toolset(self, pane: PaneSpec) -> toolset.ToolSet:
        """The functions the pane offers from servers: the servers and single tools it chose, named beside its
        JSON-defined tools (a clash is renamed SERVER_TOOL)."""
        if not pane.mcp:
            return toolset.ToolSet()
        only: dict[str, set[str] | None] = {}
        for item in pane.mcp:
            server, _, tool = item.partition("/")
            if not tool:
                only[server] = None
            elif only.get(server, set()) is not None:
                only[server] = {*only.get(server, set()), tool}
        try:
            taken = tool_defs.tool_names(tool_defs.parse_tools(pane.tools))
        except tool_defs.ToolsError:
            taken = []
        return toolset.build(self.tools(), taken, only)

    def definitions(self, pane: PaneSpec) -> tuple[dict, ...]:
        return tuple(self.toolset(pane).definitions())

    def answers(self, pane: PaneSpec) -> ServerAnswers:
        """What the pane's cards and its tool loop need: the MCP functions, and each call's state."""
        if not pane.mcp and pane.id not in self.calls:
            return NO_SERVERS
        routes = self.toolset(pane).routes
        states = self.calls.get(pane.id, {})
        return ServerAnswers(tuple(t.definition(n) for n, t in routes.items()),
                             {n: t.server for n, t in routes.items()}, dict(states))

    # ---- calls ------------------------------------------------------------------------------------------------
    def waiting(self, pane: PaneSpec) -> bool:
        """Whether a call of the pane's last reply still waits on its server or on the user."""
        return any(s.pending for s in self.calls.get(pane.id, {}).values())

    def needs_calls(self, pane: PaneSpec) -> bool:
        """Whether the pane's pending calls include server calls that have no state yet (start_calls sends them)."""
        routes = self.toolset(pane).routes
        known = self.calls.get(pane.id, {})
        return any(c.get("name") in routes and c.get("id") not in known for c in tool_loop.pending_calls(pane))

    def start_calls(self, pane: PaneSpec) -> int:
        """Send (or ask about) the pane's pending calls that go to a server and have no state yet; how many."""
        routes = self.toolset(pane).routes
        states = dict(self.calls.get(pane.id, {}))
        pending = tool_loop.pending_calls(pane)
        ids = {c.get("id") for c in pending}
        states = {k: s for k, s in states.items() if k in ids}  # an earlier reply's calls are done with
        started = 0
        for call in pending:
            tool = routes.get(call.get("name", ""))
            if tool is None or call.get("id") in states:
                continue
            state = CallState(call.get("id", ""), call.get("name", ""), tool.server, tool.name,
                              call.get("arguments", ""), ASKING)
            states[state.call_id] = state
            self.calls[pane.id] = states
            if self.policy.decide(tool) == APPROVE:
                self._send(pane, state)
            started += 1
        self.calls[pane.id] = states
        if started:
            self.changed.emit(pane.id)
        return started

    def approve(self, pane: PaneSpec, call_id: str, always: bool = False) -> None:
        """The user approved a call (`always`: every later call to this tool too)."""
        state = self.calls.get(pane.id, {}).get(call_id)
        if state is None or state.status != ASKING:
            return
        if always:
            self.policy.grant(state.server, state.tool)
        self._send(pane, state)
        self.changed.emit(pane.id)
        if always:  # other calls to the same tool waiting for approval go too
            for other in self.session.panes:
                for waiting in list(self.calls.get(other.id, {}).values()):
                    if waiting.status == ASKING and (waiting.server, waiting.tool) == (state.server, state.tool):
                        self.approve(other, waiting.call_id)

    def deny(self, pane: PaneSpec, call_id: str) -> None:
        """The user denied a call: the model gets an error result saying so."""
        state = self.calls.get(pane.id, {}).get(call_id)
        if state is None or state.status != ASKING:
            return
        result = denied_result(state.server, state.tool, state.arguments, call_id)
        self._set(pane.id, replace(state, status=DENIED, content=result.content))

    def cancel(self, pane: PaneSpec, call_id: str | None = None) -> None:
        """Cancel a call (or every pending call of the pane): it ends as an error the model sees."""
        for state in list(self.calls.get(pane.id, {}).values()):
            if call_id not in (None, state.call_id) or not state.pending:
                continue
            future = self._futures.pop((pane.id, state.call_id), None)
            if future is not None:
                future.cancel()
            self._set(pane.id, replace(state, status=CANCELLED,
                                       content=f"{state.tool} was cancelled by the user before it answered"))

    def set_mode(self, server: str, mode: str) -> None:
        """The server's approval mode (ask, read_only, always); calls waiting for approval that it now allows go."""
        self.policy.set_mode(server, mode)
        for pane in self.session.panes:
            for state in list(self.calls.get(pane.id, {}).values()):
                if state.status == ASKING and state.server == server:
                    tool = next((t for t in self.tools(server) if t.name == state.tool), None)
                    if tool is not None and self.policy.decide(tool) == APPROVE:
                        self.approve(pane, state.call_id)

    def mode(self, server: str) -> str:
        return self.policy.mode(server) if server in self.policy.modes else ASK

    def _send(self, pane: PaneSpec, state: CallState) -> None:
        live = pane.mcp_live or self.live
        future = self.store.call(state.server, state.tool, state.arguments, state.call_id, self.timeout_s,
                                 live=True if live else None)
        self._futures[(pane.id, state.call_id)] = future
        self.calls.setdefault(pane.id, {})[state.call_id] = replace(state, status=RUNNING)
        future.add_done_callback(lambda done, pid=pane.id, cid=state.call_id: self._arrived(pid, cid, done))

    def _arrived(self, pane_id: str, call_id: str, future: concurrent.futures.Future) -> None:
        """On the hub's thread (or at once, for a recorded answer): into the inbox, for `pump`."""
        self._inbox.append(("call", pane_id, call_id, future))
        self.notify()

    def _hub_changed(self, name: str) -> None:
        self._inbox.append(("server", name))
        self.notify()

    def pump(self) -> None:
        """Apply what the hub sent (on the owning thread): calls' answers, servers' states and tool lists."""
        servers = False
        while self._inbox:
            item = self._inbox.popleft()
            if item[0] == "server":
                servers = True
                continue
            _, pane_id, call_id, future = item
            if self._futures.get((pane_id, call_id)) is not future:
                continue  # cancelled, or an earlier reply's call
            del self._futures[(pane_id, call_id)]
            state = self.calls.get(pane_id, {}).get(call_id)
            if state is None or future.cancelled():
                continue
            result: ToolResult = future.result()
            self._set(pane_id, replace(state, status=status_of(result), content=result.content,
                                       replayed=result.replayed))
        records = self.store.records()
        if len(records) != len(self.session.mcp_records):
            self.session.mcp_records = records
        if servers:
            self.changed.emit("")

    def _set(self, pane_id: str, state: CallState) -> None:
        self.calls.setdefault(pane_id, {})[state.call_id] = state
        self.changed.emit(pane_id)
        pane = self.session.pane_by_id(pane_id)
        if pane is not None and not self.waiting(pane):
            self.answered.emit(pane)
