"""Consent, one mechanism for everything a file can make Chorus start, run or send: MCP servers (the command line
or the URL each starts), a config's code (its checks, transforms, providers and scripts) and its web hooks on
other computers (where outputs, prompts and vars would be sent).

Nothing a file names starts or runs until the user has seen exactly what would, and agreed. What they agreed to
is kept here, as the exact text they were shown, for as long as the window is open: the same text is not asked
about again, a changed one is. Sources ask through an `Ask`; the window shows it (one bar for every kind) and
calls back `on_agree` once the user agrees. Headless, `--allow-mcp` and `--allow-code` are the consent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MCP = "mcp"  # an MCP server: "NAME: what starting it runs"
CODE = "code"  # code from a config: one line per file or inline check (app/evaluate/code_checks.code_uses)
WEB = "web"  # a web hook on another computer that outputs, prompts and vars would be sent to (evaluate/webhook.py)


@dataclass(frozen=True)
class Ask:
    """A question for the user: `lines` are exactly what would start or run, shown as plain text."""

    kind: str  # MCP or CODE: a newer ask of the same kind replaces one not yet answered
    headline: str
    lines: tuple[str, ...]
    agree_label: str  # the button that agrees: "Start them", "Run it"
    on_agree: Callable[[], None]
    on_later: Callable[[], None] | None = None  # "Not now": nothing starts or runs


class ConsentLedger:
    """What the user agreed to start or run, as (kind, exact text shown)."""

    def __init__(self) -> None:
        self._agreed: set[tuple[str, str]] = set()

    def agreed(self, kind: str, line: str) -> bool:
        return (kind, line) in self._agreed

    def missing(self, kind: str, lines) -> list[str]:
        """The lines of `kind` not agreed to yet, in order."""
        return [line for line in lines if (kind, line) not in self._agreed]

    def agree(self, kind: str, lines) -> None:
        self._agreed.update((kind, line) for line in lines)
