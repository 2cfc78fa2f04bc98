"""`file://path.js:functionName` references, as promptfoo writes them for code."""

from __future__ import annotations

from pathlib import Path


def split_file(ref: str, base: Path | None) -> tuple[Path, str | None]:
    """`file://path.js:fn` → (absolute path, "fn"); the colon of a Windows drive letter is not a separator."""
    rest = ref[7:]
    colon = rest.rfind(":")
    path, name = (rest[:colon], rest[colon + 1:]) if colon > 1 else (rest, None)
    return (Path(base or ".") / path).resolve(), name
