"""MCP servers as real tools, Qt-free: configurations (and other apps' ones found on this computer), the hub that
runs the servers through the official SDK on a thread of its own, record and replay within a run group, the
approval policy, and secrets kept in the keyring.

    config = load_config("mcp.json")                 # McpConfigError: one sentence per bad entry
    hub = McpHub(config)                             # nothing starts yet
    hub.start("files").result()                      # ServerState (READY, FAILED with its stderr tail, ...)
    tools = toolset.build(hub.tools())               # a ToolSet: definitions beside a pane's JSON ones
    store = ReplayStore(hub)                         # one per run group; live=True calls every time
    store.call("files", "read", {"path": "a"}, call_id="c1").result()   # ToolResult (never raises)
    hub.close()
"""

from app.mcp import toolset
from app.mcp.approvals import (
           ALWAYS,
           APPROVE,
           ASK,
           DENY,
           MODE_LABELS,
           MODES,
           READ_ONLY,
           ApprovalPolicy,
           denied_result,
           parse_policy,
)
from app.mcp.config import McpConfig, McpConfigError, ServerConfig, load_config, parse_config, parse_server
from app.mcp.discover import FoundConfig, discover
from app.mcp.hub import CRASHED, FAILED, READY, STARTING, STOPPED, McpHub, ServerState
from app.mcp.replay import RecordedCall, ReplayStore
from app.mcp.results import (
    DEFAULT_TIMEOUT_S,
    DENIED,
    MAX_RESULT_CHARS,
    TIMEOUT,
    McpTool,
    ToolResult,
    canonical_arguments,
    error_result,
)
from app.mcp.toolset import ToolSet

__all__ = ["ALWAYS", "APPROVE", "ASK", "CRASHED", "DEFAULT_TIMEOUT_S", "DENIED", "DENY", "FAILED", "MAX_RESULT_CHARS",
           "MODES", "MODE_LABELS", "READY", "READ_ONLY", "STARTING", "STOPPED", "TIMEOUT", "ApprovalPolicy",
           "FoundConfig", "McpConfig", "McpConfigError", "McpHub", "McpTool", "RecordedCall", "ReplayStore",
           "ServerConfig", "ServerState", "ToolResult", "ToolSet", "canonical_arguments", "denied_result", "discover",
           "error_result", "load_config", "parse_config", "parse_policy", "parse_server", "toolset"]
