"""The command line's MCP parts: `python -m app mcp list MCP.json`, the flags `run` and `eval` take, and the
consent check every one of them passes before anything starts.

`mcp list` starts each server of the file (that is what listing needs, so it asks for `--allow-mcp` too), prints
`{"servers": {NAME: {"tools": [{"name", "description", "inputSchema"}]}}}` (a server that fails gets `"error"`
and its stderr tail instead of tools) and exits 0, or 1 when a server failed. `mcp find` lists the
configurations other apps keep on this computer (nothing starts). Without `--allow-mcp` nothing is started: the
command exits 2 naming each server and the exact command line or URL it would start.
"""

from __future__ import annotations

import json
import sys

from app.mcp import DEFAULT_TIMEOUT_S, McpConfig, McpConfigError, McpHub, discover, load_config

EXIT_UNUSABLE, EXIT_SERVER_FAILED = 2, 1


def add_parser(sub) -> None:
    """`mcp list` and `mcp find`."""
    mcp = sub.add_parser("mcp", help="MCP servers: list the tools of a config's servers, or find other apps' "
                         "configs")
    verbs = mcp.add_subparsers(dest="mcp_command", required=True)
    listing = verbs.add_parser("list", help="start each server of MCP.json and print its tools as JSON")
    listing.add_argument("config", help="an mcpServers file (Claude Desktop, Cursor and LM Studio write them)")
    add_consent(listing)
    verbs.add_parser("find", help="list the MCP configs Claude Desktop, Cursor and LM Studio keep here (starts "
                     "nothing)")


def add_consent(parser) -> None:
    parser.add_argument("--allow-mcp", action="store_true",
                        help="agree to start the MCP servers the file names (their command lines or URLs are "
                        "printed without it, and nothing starts)")


def add_run_arguments(run) -> None:
    """`run`'s MCP flags."""
    run.add_argument("--mcp", metavar="MCP.json", help="MCP servers whose tools lines with \"mcp\" get; their calls "
                     "are answered by the servers (one replay group: the same call runs once)")
    add_consent(run)
    run.add_argument("--mcp-approve", metavar="POLICY", default="always",
                     help="which calls go ahead: always (default: --allow-mcp is the consent), read-only (tools "
                     "marked readOnlyHint), ask (denied: nobody to ask headless); per server: NAME=MODE,...")
    run.add_argument("--mcp-live", action="store_true",
                     help="send every call to its server (no replay of an identical call between lines)")
    run.add_argument("--mcp-timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                     help=f"seconds a tool call may take (default {DEFAULT_TIMEOUT_S:g})")


def consent_refused(config: McpConfig, command: str) -> int:
    """Print what would start and why nothing did; the exit code."""
    lines = "\n".join(f"  {s.name}: {s.launch}" for s in config.servers) or "  (none)"
    print(f"chorus {command}: these MCP servers would start:\n{lines}\nNothing was started: add --allow-mcp to "
          "agree.", file=sys.stderr)
    return EXIT_UNUSABLE


def read_config(path: str, command: str) -> McpConfig | None:
    try:
        return load_config(path)
    except McpConfigError as exc:
        print(f"chorus {command}: {exc}", file=sys.stderr)
        return None


def mcp_command(args) -> int:
    if args.mcp_command == "find":
        found = [{"app": f.label, "path": str(f.path), "servers": f.config.names() if f.config else [],
                  **({"error": f.problem} if f.problem else {})} for f in discover()]
        print(json.dumps({"configs": found}, indent=2, ensure_ascii=False))
        return 0
    config = read_config(args.config, "mcp list")
    if config is None:
        return EXIT_UNUSABLE
    if not args.allow_mcp:
        return consent_refused(config, "mcp list")
    hub = McpHub(config)
    try:
        states = hub.start_all()
    finally:
        hub.close()
    out, failed = {}, False
    for state in states:
        if state.running:
            out[state.name] = {"tools": [t.listing() for t in state.tools]}
        else:
            failed = True
            out[state.name] = {"error": state.message, **({"stderr": state.stderr_tail} if state.stderr_tail else {})}
    print(json.dumps({"servers": out}, indent=2, ensure_ascii=False))
    return EXIT_SERVER_FAILED if failed else 0
