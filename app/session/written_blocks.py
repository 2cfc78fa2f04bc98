"""The blocks of versions the last autosave already wrote, copied from that file into the next one.

A pane's joined versions are kept deflated (version_list.py); writing them means inflating them, and an hour of
regenerating makes ~16,000 versions (~33 MB) that every autosave, a second or two apart, would inflate again on
the writer's thread, beside the engine's. A block never changes once joined (a changed version takes its list's
blocks apart into new ones), so the writer keeps the file it last wrote open for reading and where each block lies
in it, and the next autosave reads those bytes back (`os.pread`: from the page cache, at memory speed) instead of
inflating them. A block read back short (the file was cut by someone else) is inflated as before.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.session.version_list import Deflated


class _Stored:
    """A block's text, read from the last written file (`bytes()` of it, as a save's pieces are)."""

    __slots__ = ("block", "fd", "offset")

    def __init__(self, block: Deflated, fd: int, offset: int):
        self.block, self.fd, self.offset = block, fd, offset

    def __bytes__(self) -> bytes:
        data = os.pread(self.fd, self.block.size, self.offset)
        return data if len(data) == self.block.size else bytes(self.block)


class WrittenBlocks:
    """The autosave writer's record of its last file (one per Autosaver, used on its writer thread only)."""

    def __init__(self):
        self._fd: int | None = None
        self._where: dict[int, tuple[Deflated, int]] = {}  # id(block) -> (the block, held so the id stays its)
        self._next: dict[int, tuple[Deflated, int]] = {}

    def pieces(self, pieces: list) -> list:
        """`pieces` to write, each block the last file holds read from it; notes where each block will lie."""
        out, at, self._next = [], 0, {}
        for piece in pieces:
            if isinstance(piece, Deflated):
                block = piece
                self._next[id(block)] = (block, at)
                kept = self._where.get(id(block))  # held there, so the id is this block's; set only with `_fd`
                if kept is not None:
                    piece = _Stored(block, self._fd, kept[1])
                at += block.size
            else:
                at += len(piece)
            out.append(piece)
        return out

    def written(self, path: Path) -> None:
        """The pieces were written to `path` (which only this writer writes): read blocks from it next time."""
        fd = os.open(path, os.O_RDONLY)
        self.close()
        self._fd, self._where, self._next = fd, self._next, {}

    def failed(self) -> None:
        """The write failed: the last file is still the one to read from."""
        self._next = {}

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._where = None, {}
