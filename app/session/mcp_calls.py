"""Where each MCP call of each pane stands, for the window, Qt-free: a view of McpTools (mcp_tools.py) and the tool
loops that answer the panes' calls.

`McpCalls` starts answering a set of panes (`continue_panes`, what Continue does: an AutoLoop with the session's
McpTools, at least one round so the servers' answers always lead to the next turn), keeps the loops, and on the
owning thread (`pump`, woken by `notify` from the hub's thread) lets each loop take in the answers that arrived.
`states(pane)` says, per call of the pane's last reply that goes to a server: waiting for approval, running, done
(or replayed), error, timed out, cancelled, denied, with the text the model gets; `answers(pane)` is what the cards
render (tool_cards.ServerAnswers). `approve`, `deny` and `cancel` are the cards' buttons. `changed` is emitted with
a pane's id when its calls changed, "" when the servers did (their states, their tool lists).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from psygnal import Signal

from app.mcp import DENIED as CALL_DENIED
from app.mcp import TIMEOUT as CALL_TIMED_OUT
from app.mcp import ServerState
from app.session import tool_loop
from app.session.mcp_tools import McpTools, PendingAnswer
from app.session.state import PaneSpec
from app.session.tool_cards import NO_SERVERS, ServerAnswers

ASKING, RUNNING, DONE, ERROR, TIMED_OUT, CANCELLED, DENIED = (
    "waiting for approval", "running", "done", "error", "timed out", "cancelled", "denied")
PENDING = (ASKING, RUNNING)


@dataclass(frozen=True)
class CallState:
    call_id: str
    server: str
    tool: str
    status: str
    content: str = ""  # the text the model is given (a result, or the error)
    replayed: bool = False

    @property
    def pending(self) -> bool:
        return self.status in PENDING


def outcome(future) -> tuple[str, str, bool]:
    """(status, content, replayed) of a finished call's future."""
    if future.cancelled():
        return CANCELLED, "the call was cancelled", False
    result = future.result()
    if not result.is_error:
        return DONE, result.content, result.replayed
    if result.failure == CALL_DENIED:
        return DENIED, result.content, False
    if result.failure == CALL_TIMED_OUT:
        return TIMED_OUT, result.content, False
    return ERROR, result.content, result.replayed


class McpCalls:
    changed = Signal(str)
    """A pane's calls changed (its id), or the servers did ("")."""

    def __init__(self, mcp: McpTools, controller, notify=lambda: None):
        """`controller`: the SessionController whose auto_continue runs the loops; `notify()` wakes the owning
        thread to `pump()` (called from the hub's thread)."""
        self.mcp, self.controller, self.notify = mcp, controller, notify
        self.loops: list[tool_loop.AutoLoop] = []
        self.pending: dict[str, PendingAnswer] = {}  # pane id -> its calls under way or answered, latest
        self._news = threading.Event()
        self._watched = None
        mcp.answered.connect(self._arrived)
        mcp.approval_needed.connect(lambda approval: self.changed.emit(approval.pane_id))
        self.watch_hub()

    # ---- the owning thread ------------------------------------------------------------------------------------
    def continue_panes(self, panes: list[PaneSpec], steps: int) -> tool_loop.AutoLoop:
        """Answer the panes' pending calls (their servers', and mocks for the rest) and run the next turns, for up to
        `steps` rounds (at least one)."""
        loop = self.controller.auto_continue(panes, max(1, steps))
        self._track(loop)
        return loop

    def _track(self, loop: tool_loop.AutoLoop) -> None:
        if not loop.done:
            self.loops.append(loop)
            loop.finished.connect(lambda done: self.loops.remove(done) if done in self.loops else None)
        self._note(loop)

    def _note(self, loop: tool_loop.AutoLoop) -> None:
        for pane_id, pending in dict(loop.waiting).items():
            if self.pending.get(pane_id) is not pending:
                self.pending[pane_id] = pending
                self.changed.emit(pane_id)

    def pump(self) -> None:
        """Apply what arrived: each loop takes the answers in (the panes go on), the views hear of it."""
        self.watch_hub()
        for loop in list(self.loops):
            loop.poll()
            self._note(loop)
        for pane_id in list(self.pending):
            self.changed.emit(pane_id)
        self.changed.emit("")

    def watch_hub(self) -> None:
        """Follow the hub's news (it exists once a server was started)."""
        hub = self.mcp.hub
        if hub is not None and hub is not self._watched:
            self._watched = hub
            hub.changed.connect(lambda _name: self.notify())

    def _arrived(self, pane_id: str) -> None:
        """On the hub's thread: a pane's answers are all in."""
        self.notify()

    # ---- what the cards show -----------------------------------------------------------------------------------
    def states(self, pane: PaneSpec) -> dict[str, CallState]:
        """Call id -> where the call stands, for the pane's calls that went to a server (those the loop sent)."""
        pending = self.pending.get(pane.id)
        if pending is None:
            return {}
        asking = {a.call_id: a for a in self.mcp.approvals if a.pane_id == pane.id}
        routes = self.mcp.tools_for(pane).routes
        out = {}
        for call, future in zip(pending.calls, pending.futures, strict=True):
            call_id, name = call.get("id", ""), call.get("name", "")
            result = future.result() if future.done() and not future.cancelled() else None
            tool = routes.get(name)
            server = result.server if result is not None else tool.server if tool is not None else \
                asking[call_id].server if call_id in asking else ""
            if not server:
                continue  # answered by a mock, or a server that lists the tool no more
            if call_id in asking:
                out[call_id] = CallState(call_id, server, name, ASKING)
            elif not future.done():
                out[call_id] = CallState(call_id, server, name, RUNNING)
            else:
                out[call_id] = CallState(call_id, server, name, *outcome(future))
        return out

    def answers(self, pane: PaneSpec) -> ServerAnswers:
        """The pane's MCP functions (as its servers list them now) and its last calls' states, for its cards."""
        routes = self.mcp.tools_for(pane).routes
        index, last = tool_loop.last_calls(pane)
        states = {k: s for k, s in self.states(pane).items() if k in {c.get("id") for c in last}}
        if not routes and not states:
            return NO_SERVERS
        servers = {n: t.server for n, t in routes.items()}
        servers.update({c.get("name", ""): states[c.get("id")].server for c in last if c.get("id") in states})
        return ServerAnswers(tuple(t.definition(n) for n, t in routes.items()), servers, states)

    # ---- the cards' buttons ------------------------------------------------------------------------------------
    def approve(self, pane: PaneSpec, call_id: str, always: bool = False) -> None:
        for approval in [a for a in self.mcp.approvals if (a.pane_id, a.call_id) == (pane.id, call_id)]:
            self.mcp.decide(approval, "always" if always else "once")
            if always:  # the other calls to this tool that wait go too
                for other in [a for a in self.mcp.approvals if (a.server, a.tool) == (approval.server,
                                                                                     approval.tool)]:
                    self.mcp.decide(other, "once")
        self.changed.emit(pane.id)

    def deny(self, pane: PaneSpec, call_id: str) -> None:
        for approval in [a for a in self.mcp.approvals if (a.pane_id, a.call_id) == (pane.id, call_id)]:
            self.mcp.decide(approval, "deny")
        self.changed.emit(pane.id)

    def cancel(self, pane: PaneSpec, call_id: str) -> None:
        """Cancel a running call: it ends as an error the model is given."""
        pending = self.pending.get(pane.id)
        if pending is None:
            return
        for call, future in zip(pending.calls, pending.futures, strict=True):
            if call.get("id") == call_id:
                future.cancel()
        self.notify()

    # ---- servers ----------------------------------------------------------------------------------------------
    def state(self, name: str) -> ServerState:
        hub = self.mcp.hub
        if hub is not None and name in hub.names():
            return hub.state(name)
        entry = self.mcp.session.mcp_servers.get(name, {})
        launch = next((launch for n, launch in _launches(self.mcp) if n == name), str(entry))
        return ServerState(name, launch)


def _launches(mcp: McpTools) -> list[tuple[str, str]]:
    try:
        return mcp.launches()
    except ValueError:
        return []
