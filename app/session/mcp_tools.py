"""A session's MCP side, Qt-free: its servers (listed from the session, started only with the user's consent), the
tools each pane offers from them, approvals, one replay store per run group, and the tool turns that answer a
pane's calls.

The session holds its servers as `mcpServers` entries without secrets (`SessionModel.mcp_servers`) and the answers
recorded so far (`mcp_records`); opening a session starts nothing. `launches()` is what the user must see (the
exact command lines and URLs) before `start(names)`. A pane offers the tools of `pane.mcp` ("server" or
"server/tool") beside its JSON ones (`definitions(pane)`: the runner adds them to the request, `tools_for`).

`answer(pane)` answers the pane's pending calls without blocking: calls to MCP tools go through the approval
policy (an `Approval` waits in `approvals` for the user's choice when the server's mode is "ask": `decide`) and
then the group's ReplayStore (the same call in the same group runs once; `pane.mcp_live` sends every call); other
calls are answered from the pane's mocks as Continue answers them. It returns a `PendingAnswer` whose `turns()`
are the tool turns once `done()`; `answered` is emitted (on the hub's thread) with the pane's id when they are,
and `apply(pane, pending)`, on the session's thread, adds them to the conversation and the recordings to
`session.mcp_records`, so a saved session replays them.
"""

from __future__ import annotations

import concurrent.futures
import threading
from dataclasses import dataclass, field

from psygnal import Signal

from app.backends import KeyStore
from app.mcp import (
    APPROVE,
    DENY,
    ApprovalPolicy,
    McpConfig,
    McpHub,
    ReplayStore,
    ToolResult,
    ToolSet,
    denied_result,
    error_result,
    parse_config,
    toolset,
)
from app.mcp import secrets as mcp_secrets
from app.session import tools as tool_defs
from app.session.mocks import NO_GROUP, GroupMocks
from app.session.state import PaneSpec, SessionModel
from app.session.tool_cards import cards_for
from app.session.tool_loop import pending_calls


@dataclass
class Approval:
    """A call waiting for the user: approve once, always for this tool, or deny (`McpTools.decide`)."""

    pane_id: str
    call_id: str
    server: str
    tool: str
    arguments: str  # as the model wrote them (the card shows them, as text)
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


@dataclass
class PendingAnswer:
    """The answers to one pane's pending calls, in call order, as they arrive."""

    pane_id: str
    calls: list[dict]
    futures: list[concurrent.futures.Future]

    def done(self) -> bool:
        return all(f.done() for f in self.futures)

    def results(self) -> list[ToolResult]:
        out = []
        for call, future in zip(self.calls, self.futures, strict=True):
            if future.cancelled():
                out.append(error_result("", call.get("name", ""), call.get("arguments", ""), "the call was cancelled",
                                        call.get("id", "")))
            else:
                out.append(future.result())
        return out

    def turns(self) -> list[dict]:
        """The tool turns, each with the call id it answers; `mcp` says where the answer came from (not saved)."""
        return [{"role": "tool", "content": r.content, "tool_call_id": r.call_id, "name": call.get("name", ""),
                 **({"mcp": r.record()} if r.server else {})}
                for call, r in zip(self.calls, self.results(), strict=True)]

    def cancel(self) -> None:
        for future in self.futures:
            future.cancel()


class McpTools:
    """The session's MCP servers and calls (one per window, or per headless run)."""

    answered = Signal(str)
    """A pane's pending calls all have their answers: (the pane's id). Emitted on the hub's thread."""
    approval_needed = Signal(object)
    """A call waits for the user's approval: (the Approval). Emitted on the thread that called `answer`."""

    def __init__(self, session: SessionModel, keys: KeyStore | None = None, policy: ApprovalPolicy | None = None,
                 timeout_s: float | None = None):
        self.session, self.keys = session, keys or KeyStore()
        self.policy = policy or ApprovalPolicy()
        self.timeout_s = timeout_s
        self.hub: McpHub | None = None
        self.approvals: list[Approval] = []
        self._stores: dict[str, ReplayStore] = {}
        self._lock = threading.Lock()

    # ---- servers and consent ------------------------------------------------------------------------------------
    def config(self) -> McpConfig:
        """The session's servers (secrets blank); raises McpConfigError naming each bad entry."""
        return parse_config({"mcpServers": self.session.mcp_servers}, "the session's MCP servers")

    def import_config(self, config: McpConfig, remember: bool = True) -> None:
        """Add a configuration's servers to the session (a server of the same name is replaced): their secrets go
        to the keyring, the session keeps the rest. Nothing starts."""
        stashed = mcp_secrets.stash(config, self.keys, remember)
        self.session.mcp_servers = {**self.session.mcp_servers, **stashed.to_json()["mcpServers"]}

    def launches(self, names: list[str] | None = None) -> list[tuple[str, str]]:
        """(name, the exact command line or URL) of each server `start` would start: what consent shows."""
        config = self.config()
        return [(s.name, s.launch) for s in config.servers if names is None or s.name in names]

    def start(self, names: list[str] | None = None) -> list[concurrent.futures.Future]:
        """Start servers the user agreed to (their secrets from the keyring); futures of their ServerStates."""
        config = mcp_secrets.restore(self.config(), self.keys)
        if self.hub is None:
            self.hub = McpHub(config)
        else:
            for server in config.servers:
                if server.name not in self.hub.names():
                    self.hub.set_server(server)
        return [self.hub.start(s.name) for s in config.servers if names is None or s.name in names]

    def close(self) -> None:
        for approval in self.approvals:
            approval.future.cancel()
        if self.hub is not None:
            self.hub.close()
            self.hub = None

    # ---- tools --------------------------------------------------------------------------------------------------
    def tools_for(self, pane: PaneSpec) -> ToolSet:
        """The MCP tools the pane offers (of its chosen servers that run), named apart from its JSON tools."""
        if not pane.mcp or self.hub is None:
            return ToolSet()
        only = toolset.chosen(pane.mcp, self.hub.names())
        try:
            taken = tool_defs.tool_names(tool_defs.parse_tools(pane.tools))
        except tool_defs.ToolsError:
            taken = []
        return toolset.build(self.hub.tools(only), taken=taken, only=only)

    def definitions(self, pane: PaneSpec) -> list[dict]:
        """Function definitions to send beside the pane's own (SessionRunner.extra_tools)."""
        return self.tools_for(pane).definitions()

    def store_for(self, pane: PaneSpec) -> ReplayStore:
        """The replay store of the pane's run group: its group, else the session's ungrouped panes together (what
        Run all runs side by side)."""
        key = pane.group or ""
        with self._lock:
            if key not in self._stores:
                self._stores[key] = ReplayStore(self.hub, records=list(self.session.mcp_records))
            return self._stores[key]

    def new_group(self, pane: PaneSpec) -> None:
        """A new run of the pane's group (Run all, a sweep run again): its recordings start from the session's."""
        with self._lock:
            self._stores.pop(pane.group or "", None)

    # ---- calls --------------------------------------------------------------------------------------------------
    def routes(self, pane: PaneSpec) -> bool:
        """Whether any pending call of the pane goes to an MCP tool."""
        found = self.tools_for(pane)
        return any(found.route(c.get("name", "")) for c in pending_calls(pane))

    def answer(self, pane: PaneSpec, group: GroupMocks = NO_GROUP) -> PendingAnswer:
        """Start answering the pane's pending calls (never blocks)."""
        calls = pending_calls(pane)
        found = self.tools_for(pane)
        futures = []
        for card, call in zip(cards_for(calls, pane.tools, pane.mocks, group), calls, strict=True):
            tool = found.route(call.get("name", ""))
            if tool is None:
                futures.append(_done(error_result("", call.get("name", ""), call.get("arguments", ""),
                                                  card.problem or "no answer", call.get("id", ""))
                                     if card.answer is None else
                                     ToolResult("", card.name, "", card.answer, call_id=card.id)))
                continue
            futures.append(self._mcp_call(pane, tool, call))
        pending = PendingAnswer(pane.id, calls, futures)
        remaining = [len(futures)]

        def one_done(_future) -> None:
            with self._lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                self.answered.emit(pane.id)
        for future in futures:
            future.add_done_callback(one_done)
        return pending

    def _mcp_call(self, pane: PaneSpec, tool, call: dict) -> concurrent.futures.Future:
        arguments, call_id = call.get("arguments", ""), call.get("id", "")
        store = self.store_for(pane)
        kwargs = {"timeout_s": self.timeout_s} if self.timeout_s else {}
        decision = self.policy.decide(tool)
        if decision == APPROVE:
            return store.call(tool.server, tool.name, arguments, call_id, live=pane.mcp_live or None, **kwargs)
        if decision == DENY:
            return _done(denied_result(tool.server, tool.name, arguments, call_id))
        approval = Approval(pane.id, call_id, tool.server, tool.name, arguments)
        out: concurrent.futures.Future = concurrent.futures.Future()

        def decided(choice: concurrent.futures.Future) -> None:
            with self._lock:
                if approval in self.approvals:
                    self.approvals.remove(approval)
            if choice.cancelled() or choice.result() == DENY:
                out.set_result(denied_result(tool.server, tool.name, arguments, call_id))
                return
            inner = store.call(tool.server, tool.name, arguments, call_id, live=pane.mcp_live or None, **kwargs)
            inner.add_done_callback(lambda f: out.cancel() if f.cancelled() else out.set_result(f.result()))
        approval.future.add_done_callback(decided)
        with self._lock:
            self.approvals.append(approval)
        self.approval_needed.emit(approval)
        return out

    def decide(self, approval: Approval, choice: str) -> None:
        """The user's answer: "once", "always" (for this tool of this server) or "deny"."""
        if choice == "always":
            self.policy.grant(approval.server, approval.tool)
        if not approval.future.done():
            approval.future.set_result(DENY if choice == "deny" else APPROVE)

    def apply(self, pane: PaneSpec, pending: PendingAnswer) -> None:
        """On the session's thread, once `pending.done()`: the tool turns join the pane's conversation (the next run
        continues from them) and the recordings join the session."""
        if pending_calls(pane) == pending.calls:
            pane.turns = [*pane.turns, *pending.turns()]
        self.keep_records()

    def keep_records(self) -> None:
        """Every group's recordings into the session (replaced, so its events fire and autosave follows)."""
        with self._lock:
            stores = list(self._stores.values())
        seen = {(r.server, r.tool, r.arguments): r for r in self.session.mcp_records}
        for store in stores:
            for record in store.records():
                seen.setdefault((record.server, record.tool, record.arguments), record)
        if len(seen) != len(self.session.mcp_records):
            self.session.mcp_records = list(seen.values())


def _done(result: ToolResult) -> concurrent.futures.Future:
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_result(result)
    return future
