"""Crash-safe files, for every layer: a write that leaves the old content or the new, never a mix; stale
temporaries of an interrupted write cleared; a bad file moved aside, never deleted. Sessions, exports, reports,
votes and the model scan cache are all written with it."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path


def write_atomic(path: str | Path, text: str | bytes | list) -> None:
    """Replace `path` with `text` (str: written as UTF-8; bytes: as they are; a list of pieces: `bytes()` of
    each, one after another) so that a crash leaves either the old or the new content. The new file gets the
    mode an editor's would: the old file's, else 0666 less the umask."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as for any new file
    try:
        if path.exists():
            os.fchmod(fd, path.stat().st_mode & 0o7777)
        with os.fdopen(fd, "wb") as f:
            for piece in text if isinstance(text, list) else [text]:
                f.write(piece.encode("utf-8") if isinstance(piece, str) else bytes(piece))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a power cut
    finally:
        os.close(dir_fd)


def remove_stale_temps(path: str | Path) -> int:
    """Delete temporary files an interrupted `write_atomic` of `path` left behind (never the file itself)."""
    path = Path(path)
    stale = list(path.parent.glob(f".{path.name}.*.tmp"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return len(stale)


def move_aside(path: str | Path) -> Path:
    """Rename a bad file out of the way (next to it, timestamped) so it is kept, never deleted."""
    path = Path(path)
    target = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        n += 1
    os.replace(path, target)
    return target
