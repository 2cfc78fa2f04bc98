"""The tool loop: answer a reply's calls with the pane's mock results and let the model go on, by hand or by itself.

*Continue* appends one `tool` turn per call (the mock result, with the id of the call it answers) after the
assistant turn that made the calls (recorded with its `tool_calls` when the run ended), then runs the pane: the
model's template shows the results in its own tool-response format. A pane is continued only when every call of its
last reply is valid and answered (tool_cards.py); otherwise CannotContinue says which call and why and nothing
changes. A pane's calls are answered from its own mocks, else from its group's (`group_mocks`: the session's
`group_mocks[pane.group]`, checked against the tools of the group's panes). `AutoLoop` repeats that up to N steps
for a set of panes, and submits every pane's step together once the last of them has ended, so the steps join the
same engine batch.
"""

from __future__ import annotations

import dataclasses
import json

from psygnal import Signal

from app.engine import limits
from app.session import tools as tool_defs
from app.session.conversation import plan_run
from app.session.mocks import NO_GROUP, GroupMocks
from app.session.state import PaneSpec, SessionModel
from app.session.tool_cards import NO_SERVERS, Card, ServerAnswers, call_line, cards_for, live_cards

AUTO_STEPS = limits.Limit(0, 20, 3)  # rounds an auto-continue may run (0: Continue answers once, by hand)


class CannotContinue(ValueError):
    """The pane's calls cannot be answered (the message says which call and why); nothing was changed."""


def pending_calls(pane: PaneSpec) -> list[dict]:
    """The calls of the pane's last assistant turn when no result follows them yet ([] otherwise)."""
    turns = pane.turns
    if turns and turns[-1]["role"] == "assistant" and turns[-1].get("tool_calls"):
        return list(turns[-1]["tool_calls"])
    return []


def last_calls(pane: PaneSpec) -> tuple[int, list[dict]]:
    """(index, calls) of the pane's last assistant turn that called tools ((-1, []) when none did)."""
    for index in range(len(pane.turns) - 1, -1, -1):
        if pane.turns[index]["role"] == "assistant" and pane.turns[index].get("tool_calls"):
            return index, list(pane.turns[index]["tool_calls"])
    return -1, []


def repeated_call(pane: PaneSpec) -> str:
    """The first pending call that repeats one the conversation already answered (the same function and
    arguments), as `name(arguments)`; "" when none does. A small model given a result often calls the same tool
    again: auto-continue stops there rather than feed it the same result round after round."""
    answered_ids = {t.get("tool_call_id") for t in pane.turns if t["role"] == "tool"}
    answered = {(c.get("name"), _canonical(c.get("arguments", ""))) for t in pane.turns if t["role"] == "assistant"
                for c in t.get("tool_calls", ()) if c.get("id") in answered_ids}
    return next((call_line(c) for c in pending_calls(pane)
                 if (c.get("name"), _canonical(c.get("arguments", ""))) in answered), "")


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except ValueError:
        return arguments


def group_tool_names(panes: list[PaneSpec]) -> tuple[str, ...]:
    """The tools the panes define (those whose tools check), each once, in order: what a group's mocks may name."""
    names: dict[str, None] = {}
    for pane in panes:
        try:
            names.update(dict.fromkeys(tool_defs.tool_names(tool_defs.parse_tools(pane.tools))))
        except tool_defs.ToolsError:
            continue
    return tuple(names)


def group_mocks(session: SessionModel, pane: PaneSpec) -> GroupMocks:
    """The mock results of the pane's group, with its panes' tools (none for a pane in no group)."""
    text = session.group_mocks.get(pane.group, "") if pane.group is not None else ""
    return GroupMocks(text, group_tool_names(session.group(pane.group))) if text.strip() else NO_GROUP


def cards(pane: PaneSpec, group: GroupMocks = NO_GROUP, servers: ServerAnswers = NO_SERVERS) -> list[Card]:
    """The cards of the pane's last calls: checked against its tools (and its MCP servers' functions, `servers`),
    answered from its mocks (else the group's) or by a server, or, once continued, with the result the
    conversation holds for each. While a reply streams calls, its own calls (the last one perhaps still being
    written: `live_cards`)."""
    if pane.result.busy and pane.result.tool_calls:
        return live_cards(pane.result.tool_calls, pane.tools, pane.mocks, group, servers)
    index, calls = last_calls(pane)
    given = {t.get("tool_call_id"): t["content"] for t in pane.turns[index + 1:] if t["role"] == "tool"}
    out = []
    for card in cards_for(calls, pane.tools, pane.mocks, group, servers):
        if card.id in given:
            card = dataclasses.replace(card, answer=given[card.id], answered=True, problem="")
        out.append(card)
    return out


def answer_turns(pane: PaneSpec, group: GroupMocks = NO_GROUP) -> list[dict]:
    """The tool turns that answer the pending calls; raises CannotContinue naming the call at fault."""
    calls = pending_calls(pane)
    if not calls:
        raise CannotContinue("no tool calls to answer: the last reply called no function")
    turns = []
    for i, card in enumerate(cards_for(calls, pane.tools, pane.mocks, group), 1):
        if card.answer is None:
            raise CannotContinue(f"call {i} ({card.name or 'no name'}) is not answered: {card.problem}")
        turns.append({"role": "tool", "content": card.answer, "tool_call_id": card.id, "name": card.name})
    return turns


def continue_pane(pane: PaneSpec, group: GroupMocks = NO_GROUP) -> None:
    """Append the mock results after the pane's calls (the next run generates the following turn). Raises
    CannotContinue, or ValueError from the run's own checks (bad tools): the pane is unchanged then."""
    turns = [*pane.turns, *answer_turns(pane, group)]
    plan_run(pane.copy(turns=turns, draft=""), use_draft=False)  # the run would start: checked before any change
    pane.turns = turns


class AutoLoop:
    """Continue `panes` by themselves for up to `steps` rounds. A round starts when none of the panes is
    running: each pane whose last reply made answerable calls is continued, all in one go (`submit(panes)`);
    a pane whose reply called nothing is done, one whose calls cannot be answered, or that repeats a call it already
    has the result of (`repeated_call`), stops with the reason in `stopped`. `finished` is emitted once no pane
    goes on."""

    finished = Signal(object)
    """The loop ended: (this AutoLoop)."""

    def __init__(self, panes: list[PaneSpec], steps: int, busy, submit, group_of=lambda pane: NO_GROUP, mcp=None):
        """`busy(pane)` says whether a pane runs; `submit(panes)` runs them (the controller's run_many);
        `group_of(pane)` gives its group's mocks when a round starts (the controller's group_mocks). `mcp`: the
        session's McpTools (mcp_tools.py): a pane whose calls go to MCP servers waits for their answers on its
        own, holding back no other pane, and goes on as soon as they are in (`poll`)."""
        self.panes, self.steps_left = list(panes), steps
        self._group_of, self.mcp = group_of, mcp
        self.waiting: dict[str, object] = {}  # pane id -> its PendingAnswer (MCP calls under way)
        self._steps: dict[str, int] = {}  # pane id -> steps it took
        self.rounds = 0
        self.stopped: dict[str, str] = {}  # pane id -> why it stopped before its reply called nothing
        self._busy, self._submit = busy, submit
        self.done = False

    def step(self) -> None:
        """Run the next round if every pane has ended its turn (call this when one ends)."""
        if self.done or any(self._busy(p) for p in self.panes if p.id not in self.waiting):
            return
        ready = []
        for pane in self.panes:
            if pane.id in self.stopped or pane.id in self.waiting or not pending_calls(pane):
                continue
            if self._steps.get(pane.id, 0) >= self.steps_left:
                self.stopped[pane.id] = "auto-continue stopped: the step limit was reached"
                continue
            if again := repeated_call(pane):
                self.stopped[pane.id] = f"auto-continue stopped: the model called {again} again, whose result " \
                                        "it already has (Continue answers it once more by hand)"
                continue
            if self.mcp is not None and self.mcp.routes(pane):
                self.waiting[pane.id] = self.mcp.answer(pane, self._group_of(pane))
                continue
            try:
                continue_pane(pane, self._group_of(pane))
            except ValueError as exc:  # CannotContinue, or the run's own checks
                self.stopped[pane.id] = str(exc)
                continue
            ready.append(pane)
        if not ready:
            if not self.waiting:
                self.done = True
                self.finished.emit(self)
            self.poll()
            return
        self._go(ready)

    def _go(self, ready: list[PaneSpec]) -> None:
        for pane in ready:
            self._steps[pane.id] = self._steps.get(pane.id, 0) + 1
        self.rounds += 1
        self._submit(ready)

    def poll(self) -> None:
        """Panes whose MCP answers are all in go on now, each by itself (call this on the session's thread when
        McpTools.answered fires)."""
        arrived = [p for p in self.panes if p.id in self.waiting and self.waiting[p.id].done()]
        for pane in arrived:
            self.mcp.apply(pane, self.waiting.pop(pane.id))
        if arrived:
            self._go(arrived)
