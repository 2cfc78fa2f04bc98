"""MCP server configurations: the `{"mcpServers": {NAME: {...}}}` files Claude Desktop, Cursor and LM Studio write.

An entry is a local server started as a process, `{"command", "args"?, "env"?, "cwd"?}` (stdio), or a remote one,
`{"url", "headers"?, "type"?}`: Streamable HTTP, or the older SSE when `type` (or `transport`) says "sse" or the
URL's path ends in `/sse` (as Cursor and LM Studio decide). Keys those apps write that Chorus has no use for
(`disabled`, `autoApprove`, `alwaysAllow`, `timeout`, `description`) are accepted and kept out of the way; any other
key is refused, so a misspelt `comand` is named rather than ignored. `parse_config` checks every entry and raises
McpConfigError listing one sentence per bad entry; nothing is started by reading a file.

`ServerConfig.launch` is what the user consents to: the exact command line, or the URL. Secrets (`env` values and
`headers`) are never shown there and never saved in a session: `secrets.py` moves them to the keyring.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

TRANSPORTS = ("stdio", "http", "sse")
_STDIO_KEYS = {"command", "args", "env", "cwd", "type", "transport"}
_REMOTE_KEYS = {"url", "headers", "type", "transport"}
_IGNORED_KEYS = {"disabled", "autoApprove", "alwaysAllow", "timeout", "description", "envFile"}
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http",
          "streamable_http": "http", "sse": "sse"}
_NAME = re.compile(r"^[^\x00-\x1f]{1,64}$")


class McpConfigError(ValueError):
    """A configuration that cannot be used; `problems` holds one sentence per bad entry (the message joins them)."""

    def __init__(self, problems: list[str], source: str = ""):
        self.problems = list(problems)
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(self.problems))


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server as configured. `transport` is "stdio" (command), "http" (Streamable HTTP) or "sse"."""

    name: str
    transport: str = "stdio"
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def launch(self) -> str:
        """What starting this server does, as the user must see it before agreeing: the command line (with the
        names, never the values, of the environment it sets) or the URL (with the names of its headers)."""
        if self.transport == "stdio":
            line = shlex.join([self.command, *self.args])
            if self.env:
                line += f"  (environment: {', '.join(sorted(self.env))})"
            if self.cwd:
                line += f"  (in {self.cwd})"
            return line
        kind = "SSE" if self.transport == "sse" else "Streamable HTTP"
        extra = f"  (headers: {', '.join(sorted(self.headers))})" if self.headers else ""
        return f"{self.url} ({kind}){extra}"

    def to_json(self, with_secrets: bool = False) -> dict:
        """The entry as an `mcpServers` value; without secrets, `env` and `headers` values are blanked ("")."""
        def values(d: dict) -> dict:
            return dict(d) if with_secrets else {k: "" for k in d}
        if self.transport == "stdio":
            out: dict = {"command": self.command, "args": list(self.args)}
            if self.env:
                out["env"] = values(self.env)
            if self.cwd:
                out["cwd"] = self.cwd
            return out
        out = {"url": self.url}
        if self.transport == "sse":
            out["type"] = "sse"
        if self.headers:
            out["headers"] = values(self.headers)
        return out


@dataclass(frozen=True)
class McpConfig:
    """The servers of one configuration, in file order. `skipped`: names of entries marked `"disabled": true`."""

    servers: tuple[ServerConfig, ...] = ()
    skipped: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return [s.name for s in self.servers]

    def get(self, name: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)

    def to_json(self, with_secrets: bool = False) -> dict:
        return {"mcpServers": {s.name: s.to_json(with_secrets) for s in self.servers}}


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _string_map(value) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def parse_server(name: str, entry) -> ServerConfig | str:
    """One `mcpServers` entry as a ServerConfig, or a sentence saying what is wrong with it."""
    where = f"server {name!r}"
    if not isinstance(name, str) or not _NAME.match(name):
        return f"{where}: a name must be 1-64 printable characters"
    if not isinstance(entry, dict):
        return f"{where}: must be an object with \"command\" (a local server) or \"url\" (a remote one)"
    kind = entry.get("type", entry.get("transport"))
    if kind is not None and kind not in _TYPES:
        return f"{where}: type {kind!r} is not one of stdio, http, streamable-http, sse"
    if "command" in entry and "url" in entry:
        return f"{where}: has both \"command\" and \"url\"; a server is one or the other"
    if "command" in entry:
        unknown = sorted(set(entry) - _STDIO_KEYS - _IGNORED_KEYS)
        if unknown:
            return f"{where}: unknown key(s) {', '.join(unknown)} (a local server takes command, args, env, cwd)"
        if not isinstance(entry["command"], str) or not entry["command"].strip():
            return f"{where}: \"command\" must be a non-empty string"
        if "args" in entry and not _strings(entry["args"]):
            return f"{where}: \"args\" must be a list of strings"
        if "env" in entry and not _string_map(entry["env"]):
            return f"{where}: \"env\" must be an object of string values"
        if "cwd" in entry and not isinstance(entry["cwd"], str):
            return f"{where}: \"cwd\" must be a string"
        if kind not in (None, "stdio"):
            return f"{where}: type {kind!r} needs a \"url\", not a \"command\""
        return ServerConfig(name, "stdio", command=entry["command"], args=tuple(entry.get("args", ())),
                            env=dict(entry.get("env") or {}), cwd=entry.get("cwd"))
    if "url" in entry:
        unknown = sorted(set(entry) - _REMOTE_KEYS - _IGNORED_KEYS)
        if unknown:
            return f"{where}: unknown key(s) {', '.join(unknown)} (a remote server takes url, headers, type)"
        url = entry["url"]
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
            return f"{where}: \"url\" must be an http:// or https:// address, got {json.dumps(url)[:80]}"
        if "headers" in entry and not _string_map(entry["headers"]):
            return f"{where}: \"headers\" must be an object of string values"
        if kind == "stdio":
            return f"{where}: type \"stdio\" needs a \"command\", not a \"url\""
        transport = _TYPES[kind] if kind else ("sse" if url.split("?")[0].rstrip("/").endswith("/sse") else "http")
        return ServerConfig(name, transport, url=url, headers=dict(entry.get("headers") or {}))
    return f"{where}: needs \"command\" (a local server) or \"url\" (a remote one)"


def parse_config(data, source: str = "") -> McpConfig:
    """A parsed `{"mcpServers": {...}}` (Claude Desktop's, Cursor's, LM Studio's mcp.json; VS Code's `servers`
    key is read too). Raises McpConfigError with one sentence per bad entry."""
    if not isinstance(data, dict):
        raise McpConfigError(["must be a JSON object {\"mcpServers\": {NAME: {...}}}"], source)
    servers = data.get("mcpServers", data.get("servers"))
    if servers is None:
        raise McpConfigError(["has no \"mcpServers\" object"], source)
    if not isinstance(servers, dict):
        raise McpConfigError(["\"mcpServers\" must be an object of NAME: {command, args, env} | {url, headers}"],
                             source)
    problems, found, skipped = [], [], []
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("disabled") is True:
            skipped.append(name)
            continue
        parsed = parse_server(name, entry)
        if isinstance(parsed, str):
            problems.append(parsed)
        else:
            found.append(parsed)
    if problems:
        raise McpConfigError(problems, source)
    return McpConfig(tuple(found), tuple(skipped))


PROMPTFOO_KEYS = {"enabled", "server", "servers", "timeout"}


def parse_promptfoo(value) -> tuple[McpConfig | None, float, list[str]]:
    """promptfoo's provider `config.mcp` (`enabled`, `server` or `servers`: {command, args, env, url, headers,
    name}, `timeout` in milliseconds, default 60000): (the servers, or None when not enabled; the per-call timeout
    in seconds; one sentence per problem)."""
    if not isinstance(value, dict):
        return None, 0.0, ["mcp must be an object {enabled, server: {command, args, url, name}, timeout}"]
    problems = [f"mcp: the key {k!r} is not supported (known: {', '.join(sorted(PROMPTFOO_KEYS))})"
                for k in sorted(set(value) - PROMPTFOO_KEYS)]
    timeout = value.get("timeout", 60000)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        problems.append(f"mcp.timeout must be a positive number of milliseconds, got {timeout!r}")
        timeout = 60000
    if not value.get("enabled"):
        return None, timeout / 1000, problems
    entries = value.get("servers") if "servers" in value else [value["server"]] if "server" in value else []
    if not isinstance(entries, list) or not entries:
        return None, timeout / 1000, problems + ["mcp: enabled, but no server is given (server: {command, args} "
                                                 "or {url})"]
    servers = []
    for i, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            problems.append(f"mcp server {i} must be an object {{command, args}} or {{url}}")
            continue
        name = entry.get("name") or f"server{i}"
        parsed = parse_server(name, {k: v for k, v in entry.items() if k != "name"})
        if isinstance(parsed, str):
            problems.append("mcp " + parsed)
        else:
            servers.append(parsed)
    return McpConfig(tuple(servers)), timeout / 1000, problems


def load_config(path: str | Path) -> McpConfig:
    """The configuration in a JSON file; raises McpConfigError (unreadable, not JSON, bad entries)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError([f"cannot read it ({getattr(exc, 'strerror', None) or exc})"], str(path)) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError([f"not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"], str(path)) from exc
    return parse_config(data, str(path))
