"""MCP configurations other apps already have on this computer, per platform. Listed only: read, never written,
and nothing in them starts until the user imports one and agrees to start its servers.

- Claude Desktop: `claude_desktop_config.json` in `~/Library/Application Support/Claude` (macOS),
  `%APPDATA%\\Claude` (Windows), `$XDG_CONFIG_HOME/Claude` or `~/.config/Claude` (Linux builds).
- Cursor: `~/.cursor/mcp.json` (the global one; a project's `.cursor/mcp.json` is opened as a file).
- LM Studio: `mcp.json` in its home (`~/.lmstudio-home-pointer`'s folder, `~/.cache/lm-studio`, `~/.lmstudio`;
  the same homes its models are found in, app/models/sources.py).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from app.mcp.config import McpConfig, McpConfigError, load_config
from app.models.sources import lmstudio_homes

APPS = {"claude": "Claude Desktop", "cursor": "Cursor", "lmstudio": "LM Studio"}


@dataclass(frozen=True)
class FoundConfig:
    """A configuration file an app wrote: which app, where, and its servers (or why it cannot be read)."""

    app: str  # a key of APPS
    path: Path
    config: McpConfig | None
    problem: str = ""

    @property
    def label(self) -> str:
        return APPS[self.app]


def candidates(home: Path, env: dict, platform: str = sys.platform) -> list[tuple[str, Path]]:
    """Every (app, file) where an app would keep its MCP configuration, whether it exists or not."""
    if platform == "darwin":
        claude = home / "Library" / "Application Support" / "Claude"
    elif platform.startswith("win"):
        claude = Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Claude"
    else:
        claude = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "Claude"
    found = [("claude", claude / "claude_desktop_config.json"), ("cursor", home / ".cursor" / "mcp.json")]
    found += [("lmstudio", h / "mcp.json") for h in lmstudio_homes(home)]
    seen, out = set(), []
    for app, path in found:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            out.append((app, path))
    return out


def discover(home: Path | None = None, env: dict | None = None, platform: str = sys.platform) -> list[FoundConfig]:
    """The configurations that exist, each read (a bad one is listed with its problem, never raised)."""
    home = Path.home() if home is None else Path(home)
    env = dict(os.environ) if env is None else env
    out = []
    for app, path in candidates(home, env, platform):
        if not path.is_file():
            continue
        try:
            out.append(FoundConfig(app, path, load_config(path)))
        except McpConfigError as exc:
            out.append(FoundConfig(app, path, None, str(exc)))
    return out
