"""Call cards: each tool call of a pane's last reply, checked against the pane's tools and answered from its mocks.

A card says which function was called, its arguments pretty-printed, whether they validate against that function's
`parameters` (jsonschema, as app/session/tools.py checks the schemas themselves), and the mock result that would
answer it: the pane's own mock for that tool, else its group's (app/session/mocks.py). A call to an unknown
function, arguments that are not JSON or do not validate, or a call no mock answers is never answered:
`Card.answer` is None and `Card.problem` says why. Views render cards; the loop (tool_loop.py) submits only when
every card of a pane is answerable. While a reply streams, its calls are cards already (`live_cards`): a call whose
arguments are still being written is `streaming` (no verdict yet), and fills in as they grow.

A call to a function an MCP server offers (`ServerAnswers`, from app/session/mcp_calls.py) is answered by that
server, not by a mock: its card carries the server, the call's state (running, done, error, ...), whether the
answer was replayed from the group's recording, and the answer once there is one.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import jsonschema

from app.session import mocks as mock_results
from app.session import tools as tool_defs

VALID, UNKNOWN, NOT_JSON, INVALID = "valid", "unknown function", "arguments not JSON", "invalid arguments"


@dataclass(frozen=True)
class ServerAnswers:
    """A pane's MCP side: the functions its servers offer, which server answers each, and its calls' states
    (call id -> an object with `status`, `content`, `replayed` and `pending`: mcp_calls.CallState)."""

    definitions: tuple[dict, ...] = ()
    servers: dict[str, str] = dataclasses.field(default_factory=dict)  # function name -> server
    states: dict[str, object] = dataclasses.field(default_factory=dict)


NO_SERVERS = ServerAnswers()


@dataclass(frozen=True)
class Card:
    id: str
    name: str
    arguments: str  # as the model wrote them (JSON text)
    pretty: str  # indented JSON, or the raw text when it is not JSON
    status: str  # VALID, UNKNOWN, NOT_JSON or INVALID
    problem: str = ""  # why the call is not valid, or why no mock answers it ("" when answerable)
    answer: str | None = None  # the mock result that answers it (only for a valid call), or the one that did
    answered: bool = False  # a tool turn with this result follows the call in the conversation
    from_group: bool = False  # the answer is the group's mock result (the pane has none for this tool)
    streaming: bool = False  # the reply is still writing this call's arguments: no verdict yet
    server: str = ""  # the MCP server this call goes to ("" = answered by a mock)
    call_status: str = ""  # a server call's state (mcp_calls: running, done, error, ...; "" = not sent yet)
    replayed: bool = False  # the server's answer is the group's recorded one, not a new call

    @property
    def valid(self) -> bool:
        return self.status == VALID


def check_call(name: str, arguments: str, schemas: dict[str, dict]) -> tuple[str, str, object]:
    """(status, problem, parsed arguments) of one call against {tool name: parameters}."""
    if name not in schemas:
        listed = ", ".join(schemas) or "the pane has no tools"
        return UNKNOWN, f"{name!r} is not one of the pane's tools ({listed})", None
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        return NOT_JSON, f"the arguments are not JSON ({exc.msg} at column {exc.colno})", None
    try:
        jsonschema.validate(args, schemas[name])
    except jsonschema.ValidationError as exc:
        at = "/".join(str(p) for p in exc.path)
        return INVALID, f"the arguments do not match {name}'s parameters{f' (at {at})' if at else ''}: " \
                        f"{exc.message}", args
    return VALID, "", args


def schemas_of(tools: list[dict]) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"].get("parameters", {"type": "object"}) for t in tools}


def cards_for(calls: list[dict], tools_text: str, mocks_text: str,
              group: mock_results.GroupMocks = mock_results.NO_GROUP,
              servers: ServerAnswers = NO_SERVERS) -> list[Card]:
    """Cards for `calls` ({id, name, arguments}) under a pane's tools and mocks as written, and its group's
    mocks (a pane's own mock for a tool wins), and the functions its MCP servers answer (`servers`). Tools or
    mocks (the pane's or the group's) that do not check make every card say so (and answer nothing)."""
    try:
        tools = tool_defs.parse_tools(tools_text) + list(servers.definitions)
    except tool_defs.ToolsError as exc:
        tools, tools_problem = [], str(exc)
    else:
        tools_problem = ""
    schemas = schemas_of(tools)
    try:
        own = mock_results.parse_mocks(mocks_text, list(schemas) if tools else None)
        shared = mock_results.parse_mocks(group.text, group.tool_names, owner="group")
        mocks_problem = ""
    except mock_results.MockError as exc:
        own, shared, mocks_problem = {}, {}, str(exc)
    mocks = {**shared, **own}  # the pane's own mock for a tool replaces its group's
    out = []
    for call in calls:
        name, arguments = call.get("name", ""), call.get("arguments", "")
        status, problem, args = check_call(name, arguments, schemas)
        pretty = json.dumps(args, indent=2, ensure_ascii=False) if args is not None else arguments
        answer = None
        server = servers.servers.get(name, "") if not tools_problem else ""
        state = servers.states.get(call.get("id", "")) if server else None
        if tools_problem:
            problem = tools_problem  # no call can be checked while the tools themselves do not
        elif server and state is not None and not state.pending:
            answer = state.content  # the server's answer (or the error the model is given)
        elif server:
            problem = "the server has not answered yet" if state is not None else f"goes to MCP server {server!r}"
        elif status == VALID:
            if mocks_problem:
                problem = mocks_problem
            elif name not in mocks:
                problem = f"no mock result for {name}: give one under Tools → Mock results (pane or group)"
            elif (answer := mocks[name].answer(args if isinstance(args, dict) else {})) is None:
                problem = f"no mock case of {name} matches these arguments, and it has no default \"result\""
        out.append(Card(call.get("id", ""), name, arguments, pretty, status, problem, answer,
                        from_group=answer is not None and name not in own and not server, server=server,
                        call_status=getattr(state, "status", ""), replayed=getattr(state, "replayed", False)))
    return out


def live_cards(calls: list[dict], tools_text: str, mocks_text: str,
               group: mock_results.GroupMocks = mock_results.NO_GROUP,
               servers: ServerAnswers = NO_SERVERS) -> list[Card]:
    """Cards for the calls of a reply still streaming: a call whose arguments do not read as JSON yet is being
    written (`streaming`, its text as it stands); the others are checked and answered as `cards_for` does."""
    return [dataclasses.replace(card, streaming=True, problem="", pretty=card.arguments)
            if card.status == NOT_JSON else card for card in cards_for(calls, tools_text, mocks_text, group, servers)]


def validity(calls: list[dict], tools_text: str) -> tuple[int, int]:
    """(valid calls, calls) of a reply under the pane's tools."""
    cards = cards_for(calls, tools_text, "")
    return sum(c.valid for c in cards), len(cards)


def f1(called: set[str], expected: set[str]) -> float | None:
    """promptfoo's tool-call-f1 over names (order and repeats do not count); None without expected names."""
    if not expected:
        return None
    hits = len(called & expected)
    precision = hits / len(called) if called else 0.0
    recall = hits / len(expected)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def expected_names(text: str) -> set[str]:
    """A pane's expected calls as written: names separated by commas."""
    return {name.strip() for name in text.split(",") if name.strip()}


def call_line(call: dict) -> str:
    """One call as a reader sees it: name(arguments), arguments compact JSON."""
    try:
        args = json.dumps(json.loads(call.get("arguments") or "{}"), ensure_ascii=False)
    except json.JSONDecodeError:
        args = call.get("arguments", "")
    return f"{call.get('name', '')}({args})"


def turn_text(turn: dict) -> str:
    """A turn as the conversation shows it: an assistant's calls as `→ name(arguments)` lines after its text, a
    tool result under the function that gave it."""
    if turn["role"] == "tool":
        return f"{turn.get('name', '')} → {turn['content']}" if turn.get("name") else turn["content"]
    calls = "\n".join(f"→ {call_line(c)}" for c in turn.get("tool_calls", ()))
    return "\n".join(part for part in (turn["content"], calls) if part)


def reply_text(result) -> str:
    """A result's reply as compare views show it (diff, arena, judge): its text, then each call as
    `→ name(arguments)`, so calls read as calls whichever backend parsed them."""
    calls = "\n".join(f"→ {call_line(c)}" for c in result.tool_calls)
    return "\n".join(part for part in (result.text, calls) if part)
