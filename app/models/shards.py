"""Split GGUF models: `<name>-00001-of-00003.gguf` and its siblings are one model (llama.cpp's
llama_split_path naming, "%s-%05d-of-%05d.gguf"); llama.cpp is given the first shard and finds the rest."""

from __future__ import annotations

import re
from pathlib import Path

SPLIT = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.I)


def split_parts(name: str) -> tuple[str, int, int] | None:
    """(prefix, index, count) of a shard's file name, or None for a whole file."""
    match = SPLIT.match(name)
    if not match or not 1 <= int(match["index"]) <= int(match["count"]):
        return None
    return match["prefix"], int(match["index"]), int(match["count"])


def shard_paths(path: Path) -> list[Path]:
    """Every shard of the model whose first (or any) shard is `path`, in order; `[path]` for a whole file.
    Shards that are missing are left out (the caller compares the count)."""
    parts = split_parts(path.name)
    if parts is None:
        return [path]
    prefix, _, count = parts
    names = [f"{prefix}-{i:05d}-of-{count:05d}.gguf" for i in range(1, count + 1)]
    return [path.with_name(n) for n in names if path.with_name(n).exists()]


def group(files: list[Path]) -> list[tuple[list[Path], int]]:
    """Group a folder listing into models: (shards in order, expected shard count). Whole files are (
    [file], 1); a split model appears once, under its lowest-numbered shard present."""
    models: list[tuple[list[Path], int]] = []
    splits: dict[tuple[Path, str, int], list[tuple[int, Path]]] = {}
    for f in files:
        parts = split_parts(f.name)
        if parts is None:
            models.append(([f], 1))
        else:
            prefix, index, count = parts
            splits.setdefault((f.parent, prefix.lower(), count), []).append((index, f))
    for (_, _, count), found in splits.items():
        models.append(([f for _, f in sorted(found)], count))
    return models


def missing_note(shards: list[Path], count: int) -> str | None:
    """Why an incomplete split model cannot load, or None when every shard is there."""
    if len(shards) == count:
        return None
    present = {split_parts(s.name)[1] for s in shards}
    gone = [i for i in range(1, count + 1) if i not in present]
    listed = ", ".join(str(i) for i in gone[:5]) + ("…" if len(gone) > 5 else "")
    return f"split model with shard(s) {listed} of {count} missing"
