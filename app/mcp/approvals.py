"""Approvals: whether a tool call may go to its server, per server.

Modes: `ask` (the default: the user approves each call once, or "always for this tool", or denies it), `read_only`
(calls to tools whose `readOnlyHint` is true go ahead; the others are asked about), `always`. A denied call gets
`denied_result`: an error result the model sees as the tool's answer. The window shows the card for `ask`;
headless runs have nobody to ask, so `decide(..., headless=True)` turns `ask` into a denial (safe by default):
`run --allow-mcp` passes the policy the user gave on the command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.mcp.results import DENIED, McpTool, ToolResult, error_result

ASK, READ_ONLY, ALWAYS = "ask", "read_only", "always"
MODES = (ASK, READ_ONLY, ALWAYS)
MODE_LABELS = {ASK: "Ask every time", READ_ONLY: "Auto for read-only tools", ALWAYS: "Always allow"}
APPROVE, DENY = "approve", "deny"


@dataclass
class ApprovalPolicy:
    """Per-server modes (a server not named is `default`) and the tools approved "always" by the user."""

    modes: dict[str, str] = field(default_factory=dict)
    default: str = ASK
    granted: set[tuple[str, str]] = field(default_factory=set)  # (server, tool) approved for good

    def __post_init__(self) -> None:
        for mode in [self.default, *self.modes.values()]:
            if mode not in MODES:
                raise ValueError(f"approval mode {mode!r} is not one of {', '.join(MODES)}")

    def mode(self, server: str) -> str:
        return self.modes.get(server, self.default)

    def set_mode(self, server: str, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"approval mode {mode!r} is not one of {', '.join(MODES)}")
        self.modes[server] = mode

    def grant(self, server: str, tool: str) -> None:
        """"Always for this tool": its later calls need no approval."""
        self.granted.add((server, tool))

    def decide(self, tool: McpTool | tuple[str, str, bool], headless: bool = False) -> str:
        """APPROVE, ASK or (headless, where nobody can be asked) DENY for a call to `tool` (an McpTool, or
        (server, name, read_only))."""
        server, name, read_only = (tool.server, tool.name, tool.read_only) if isinstance(tool, McpTool) else tool
        mode = self.mode(server)
        if mode == ALWAYS or (server, name) in self.granted or (mode == READ_ONLY and read_only):
            return APPROVE
        return DENY if headless else ASK


def denied_result(server: str, tool: str, arguments, call_id: str = "", why: str = "") -> ToolResult:
    """The answer a denied call gets: an error the model sees."""
    reason = why or "the user denied this call"
    return error_result(server, tool, arguments, f"{tool} was not run: {reason}", call_id, failure=DENIED)


def parse_policy(text: str) -> ApprovalPolicy:
    """`--mcp-approve` as given: "MODE" for every server, or "NAME=MODE,NAME=MODE[,MODE]". Raises ValueError."""
    policy = ApprovalPolicy(default=ALWAYS)
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, mode = part.rpartition("=")
        mode = mode.replace("-", "_")
        if mode not in MODES:
            raise ValueError(f"--mcp-approve: {mode!r} is not one of ask, read-only, always")
        if name:
            policy.set_mode(name, mode)
        else:
            policy.default = mode
    return policy
