"""The one error an evaluation config raises: every problem found, listed together, before anything runs.

Loading a config never stops at the first bad key: each reader adds what it finds to a `Problems` list, and
`Problems.raise_if_any` raises one `ConfigError` naming all of them (where, then what), so a user fixes the file
in one pass. Nothing Chorus does not support is dropped silently: it is a problem here.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """An evaluation config that cannot run as written. `problems` holds one sentence per problem."""

    def __init__(self, problems: list[str], source: str = ""):
        self.problems = list(problems)
        self.source = source
        where = f"{source}: " if source else ""
        count = len(self.problems)
        head = f"{where}cannot run this evaluation ({count} problem{'s' if count != 1 else ''}):"
        super().__init__("\n".join([head, *(f"  - {p}" for p in self.problems)]))


class Problems:
    """Collects problems as `where: what` lines while a config is read."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, what: str) -> None:
        line = f"{where}: {what}" if where else what
        if line not in self.items:
            self.items.append(line)

    def unsupported(self, where: str, what: str, why: str = "") -> None:
        self.add(where, f"{what} is not supported by Chorus" + (f" ({why})" if why else ""))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self, source: str = "") -> None:
        if self.items:
            raise ConfigError(self.items, source)
