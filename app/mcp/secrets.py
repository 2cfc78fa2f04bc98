"""Secrets of MCP servers (`env` values, `headers`) in the keyring, never in session files or exports.

`stash(config, keys)` stores every value in the KeyStore (the OS keyring when there is one, else this process's
memory) and returns the configuration with its values blanked: that is what a session file holds. `restore`
fills blank values back from the store before a server starts; a value it cannot find stays blank, and
`missing` names those so the window can ask for them.
"""

from __future__ import annotations

from dataclasses import replace

from app.backends import KeyStore
from app.mcp.config import McpConfig, ServerConfig

_PREFIX = "chorus-mcp"


def _key(server: str, kind: str, name: str) -> str:
    return f"{_PREFIX}:{server}:{kind}:{name}"


_PROCESS: KeyStore | None = None


def process_keys() -> KeyStore:
    """One store for this process's secrets that nobody asked to remember (an evaluation config's): kept in
    memory (`stash(..., remember=False)`), found again by `restore` anywhere in the process."""
    global _PROCESS
    if _PROCESS is None:
        _PROCESS = KeyStore()
    return _PROCESS


def stash(config: McpConfig, keys: KeyStore, remember: bool = True) -> McpConfig:
    """Store the secrets of every server; the configuration without them (values "")."""
    servers = []
    for server in config.servers:
        for kind, values in (("env", server.env), ("header", server.headers)):
            for name, value in values.items():
                if value:
                    keys.set(_key(server.name, kind, name), value, remember=remember)
        servers.append(replace(server, env={k: "" for k in server.env}, headers={k: "" for k in server.headers}))
    return McpConfig(tuple(servers), config.skipped)


def restore_server(server: ServerConfig, keys: KeyStore) -> ServerConfig:
    env = {k: v or keys.get(_key(server.name, "env", k)) or "" for k, v in server.env.items()}
    headers = {k: v or keys.get(_key(server.name, "header", k)) or "" for k, v in server.headers.items()}
    return replace(server, env=env, headers=headers)


def restore(config: McpConfig, keys: KeyStore) -> McpConfig:
    """The configuration with its blank secrets filled from the store."""
    return McpConfig(tuple(restore_server(s, keys) for s in config.servers), config.skipped)


def blank_entries(entries: dict[str, dict]) -> dict[str, dict]:
    """`mcpServers` entries as a session file keeps them: every `env` and `headers` value blanked (the keys stay,
    so the window knows what to ask for or fetch from the keyring)."""
    out = {}
    for name, entry in entries.items():
        entry = dict(entry) if isinstance(entry, dict) else entry
        for key in ("env", "headers"):
            if isinstance(entry, dict) and isinstance(entry.get(key), dict):
                entry[key] = {k: "" for k in entry[key]}
        out[name] = entry
    return out


def missing(config: McpConfig) -> list[str]:
    """`server: env NAME` / `server: header NAME` for each secret still blank."""
    return [f"{s.name}: {kind} {k}" for s in config.servers
            for kind, values in (("env", s.env), ("header", s.headers)) for k, v in values.items() if not v]
