"""A pane's versions as a list that keeps the finished ones small: `PaneSpec.versions`.

A pane regenerating for an afternoon gathers thousands of versions. As PaneVersion objects each kept ~9 KB and 13
objects for the cyclic collector to walk (its result, their lists and dicts), so memory, every collection and
everything that visited the versions grew with them. Here a version nobody else holds is kept *packed*: the bytes
of its file encoding (the autosave writes those bytes anyway), which the collector never walks, and a read of it
(`versions[i]`) makes it a PaneVersion again, kept as one until the next `settle`.

`settle` (the session file's encoder calls it on each save and autosave) returns the versions' JSON array, in
pieces, and packs the ones that can be: finished, not listened to (their result's signal group rested), without
images, and held by nobody but this list, so nobody can tell that reading one later makes a new object: the
pane's shown result, a view's version, a compare view's reply all stay the same objects. Packed versions at the
front join blocks of JOIN_AT, each kept deflated (zlib, fastest level: a version's JSON is ~2 KB, its block keeps
a fraction of that), which a save hands its writer as they are, to be inflated on the writer's thread: at 16,000
versions the autosave's part on the GUI thread is under a millisecond, where encoding every version took ~56 ms,
and an afternoon's versions keep a fraction of the memory their text would.

The list is replaced, never changed, when versions are added (`plus`); `grown_from` tells a reader that kept an
earlier list whether this one is it with versions added at the end. Packing changes only how a version is held.
Qt-free, and free of the file format: the session file's module (version_file.py) hands `settle` its codec.
"""

from __future__ import annotations

import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, overload

from app.session import resting

PaneVersion = Any  # app.session.versions.PaneVersion, which imports this module (a pane's versions are this list)


class Codec(Protocol):
    """How a version becomes bytes and back (version_file.CODEC)."""

    def encode(self, version: PaneVersion) -> bytes: ...

    def decode(self, data: bytes) -> PaneVersion: ...

    def summary(self, data: bytes) -> tuple[str, str]:
        """(started_at, its result's state), read without making the version."""
        ...

    def setup(self, data: bytes) -> PaneVersion:
        """The version's messages and settings (what it ran with), its result left unread (an empty one)."""
        ...


# Packed versions a joined block holds: each join deflates one block (~130 KB of JSON, well under a millisecond).
JOIN_AT = 64


class Deflated:
    """Bytes kept deflated; `bytes(piece)` inflates them (a save's writer does, on its own thread). A piece of a
    saved text is bytes or this: whoever joins or writes pieces takes `bytes()` of each."""

    __slots__ = ("data", "size")

    def __init__(self, plain: bytes):
        self.data, self.size = zlib.compress(plain, 1), len(plain)

    def __bytes__(self) -> bytes:
        return zlib.decompress(self.data)

    def __eq__(self, other) -> bool:
        return other is self or (isinstance(other, Deflated) and other.data == self.data)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Deflated({len(self.data)} bytes)"


class VersionList(Sequence):
    """A pane's versions, oldest first; see the module's docstring. Built from PaneVersions (or packed bytes
    with their codec, as a file is read).

    Held as `_items`: a PaneVersion, or a packed version's bytes, or None for one of the first `len(_ends)`,
    whose encodings are kept joined by commas in `_blocks` of JOIN_AT (the i-th ends at offset `_ends[i]` of
    block i // JOIN_AT, inflated): a save writes each block as one piece, so its cost is the versions that
    changed, not all of them. A joined version that is read becomes a PaneVersion in `_items` and stays in its
    block while its encoding does not change. A list read from a file joins its versions at once (on the thread
    that reads it), so its first save deflates nothing."""

    __slots__ = ("_items", "_codec", "_line", "_blocks", "_ends", "_inflated")

    def __init__(self, items: Iterable[PaneVersion | bytes] = (), codec: Codec | None = None):
        self._items: list[PaneVersion | bytes | None] = list(items)
        self._codec = codec
        self._line = _Line()  # shared by the lists `plus` made, one from another
        self._blocks: tuple[Deflated, ...] = ()
        self._ends = array("I")
        self._inflated: tuple[int, bytes] | None = None  # the block last read, inflated
        if codec is None and any(isinstance(item, bytes) for item in self._items):
            raise ValueError("packed versions need the codec that packed them")
        self._join_packed()

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> PaneVersion: ...

    @overload
    def __getitem__(self, index: slice) -> list[PaneVersion]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._version(i) for i in range(*index.indices(len(self._items)))]
        return self._version(range(len(self._items))[index])

    def __iter__(self) -> Iterator[PaneVersion]:
        return (self._version(i) for i in range(len(self._items)))

    def __eq__(self, other) -> bool:
        """Cheap where it is asked most (an evented assignment compares the old list with the new): lengths first,
        then the items as held (a version by identity, a packed one by its bytes)."""
        if isinstance(other, VersionList):
            return other is self or (len(other) == len(self) and other._items == self._items
                                     and other._blocks == self._blocks)
        if isinstance(other, list):
            return len(other) == len(self) and list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"VersionList({len(self._items)} versions, {self.packed()} packed)"

    def plus(self, version: PaneVersion) -> VersionList:
        """This list with `version` added at the end (a new list: a pane's versions are replaced, never changed)."""
        grown = VersionList.__new__(VersionList)
        grown._items = [*self._items, version]
        grown._codec, grown._line = self._codec, self._line
        grown._blocks, grown._ends = self._blocks, self._ends  # never changed in place: shared
        grown._inflated = self._inflated
        return grown

    def grown_from(self, other: Sequence[PaneVersion]) -> bool:
        """`other` is this list as it was before versions were added at its end (made by `plus`, from it)."""
        return isinstance(other, VersionList) and other._line is self._line and len(other) <= len(self)

    def index_of_result(self, result) -> int | None:
        """Which version `result` is, looked for from the newest without reading packed versions (a packed one's
        result no longer exists as an object, so it cannot be the one asked for)."""
        items = self._items
        return next((i for i in range(len(items) - 1, -1, -1) if _held(items[i]) and items[i].result is result),
                    None)

    def image_refs(self) -> list:
        """The images every version names, without reading packed versions (a version with images is never
        packed)."""
        return [ref for item in self._items if _held(item) for ref in item.image_refs]

    def summaries(self) -> list[tuple[str, str]]:
        """Each version's (started_at, its result's state), without reading packed versions into objects."""
        items, codec = self._items, self._codec
        return [(item.started_at, item.result.state.value) if _held(item)
                else codec.summary(item if item is not None else self._encoding(i)) for i, item in enumerate(items)]

    def setups(self, start: int = 0) -> Iterator[PaneVersion]:
        """From `start` on, each version as far as what it ran with (messages and settings): a held version itself,
        a packed one read without its result and not kept (the version bar reads a pane's every version when it
        is built: reading them whole unpacked them all, and the next autosave encoded them all again)."""
        items, codec = self._items, self._codec
        for i in range(start, len(items)):
            item = items[i]
            yield item if _held(item) else codec.setup(item if item is not None else self._encoding(i))

    def packed(self) -> int:
        """How many versions are held packed."""
        return sum(not _held(item) for item in self._items)

    def settle(self, codec: Codec, encoded: Callable[[PaneVersion], bytes]) -> list[bytes | Deflated]:
        """The versions as a JSON array, in pieces to be written one after another (each joined block is one),
        packing each version that can be (see the module's docstring). `encoded` gives a held version's
        encoding, which it may keep between saves."""
        self._codec = codec
        if self._items[:len(self._ends)].count(None) != len(self._ends):  # joined versions were read since
            self._settle_read(encoded)
        items, tail = self._items, []
        for i in range(len(self._ends), len(items)):
            version = items[i]
            if isinstance(version, bytes):
                tail.append(version)
                continue
            data = encoded(version)
            tail.append(data)
            del version  # counted by `_held_elsewhere` otherwise
            if _may_pack(items, i):
                items[i] = data
        pieces: list[bytes | Deflated] = [b"["]
        for block in self._blocks:
            pieces += [block, b","]
        if tail:
            pieces.append(b",".join(tail))
        elif self._blocks:
            pieces.pop()
        pieces.append(b"]")
        self._join_packed()
        return pieces

    def _settle_read(self, encoded: Callable[[PaneVersion], bytes]) -> None:
        """The joined versions that were read: packed again if they can be; the run taken apart if one changed."""
        items = self._items
        for i in range(len(self._ends)):
            version = items[i]
            if version is None:
                continue
            changed = encoded(version) != self._encoding(i)
            del version  # counted by `_held_elsewhere` otherwise
            if changed:
                self._unjoin()
                return
            if _may_pack(items, i):
                items[i] = None

    def _join_packed(self) -> None:
        """Packed versions right after the joined blocks join a block of their own for every JOIN_AT of them."""
        items, first = self._items, len(self._ends)
        last = first
        while last < len(items) and isinstance(items[last], bytes):
            last += 1
        if last - first < JOIN_AT:
            return
        blocks, ends = list(self._blocks), array("I", self._ends)
        for start in range(first, last - JOIN_AT + 1, JOIN_AT):
            run = items[start:start + JOIN_AT]
            blocks.append(Deflated(b",".join(run)))
            at = 0
            for data in run:
                ends.append(at + len(data))
                at += len(data) + 1
            items[start:start + JOIN_AT] = [None] * JOIN_AT
        self._blocks, self._ends = tuple(blocks), ends

    def _unjoin(self) -> None:
        """Every joined version packed on its own again (one of them changed after it was read)."""
        for i in range(len(self._ends)):
            if self._items[i] is None:
                self._items[i] = self._encoding(i)
        self._blocks, self._ends, self._inflated = (), array("I"), None

    def _encoding(self, index: int) -> bytes:
        """A joined version's encoding (its block inflated once for a run of reads in it)."""
        block = index // JOIN_AT
        if self._inflated is None or self._inflated[0] != block:
            self._inflated = (block, bytes(self._blocks[block]))
        start = self._ends[index - 1] + 1 if index % JOIN_AT else 0
        return self._inflated[1][start:self._ends[index]]

    def _version(self, index: int) -> PaneVersion:
        item = self._items[index]
        if item is None:
            item = self._items[index] = self._codec.decode(self._encoding(index))
        elif isinstance(item, bytes):
            item = self._items[index] = self._codec.decode(item)
        return item


def _held(item) -> bool:
    """The item is a PaneVersion (not packed bytes, not a place in the joined run)."""
    return item is not None and not isinstance(item, bytes)


class _Line:
    """The identity the lists `plus` made one from another share (`grown_from`)."""

    __slots__ = ()


def _packable(version: PaneVersion) -> bool:
    """Finished, not listened to, and without images (whose files the session lists from the held versions)."""
    return not version.result.busy and not resting.awake(version.result) and not version.image_refs


def _counts(items: list, index: int) -> tuple[int, int]:
    """The references to the version at `index` and to its result, as counted from here."""
    version = items[index]
    result = version.result
    return sys.getrefcount(version), sys.getrefcount(result)


# What `_counts` reads for a version only its list holds (the list's slot, this module's names and getrefcount's
# argument): measured once, by the same code, so it holds whatever the interpreter counts.
class _Probe:
    __slots__ = ("result",)

    def __init__(self):
        self.result = object()


_ALONE = _counts([_Probe()], 0)


def _held_elsewhere(items: list, index: int) -> bool:
    """Someone besides the list holds the version or its result (a view, the pane showing it, a caller)."""
    version_refs, result_refs = _counts(items, index)
    return version_refs > _ALONE[0] or result_refs > _ALONE[1]


def _may_pack(items: list, index: int) -> bool:
    """The version at `index` can be packed (`_packable`) and nobody but the list holds it. The caller holds no
    name for it (it would be counted)."""
    return _packable(items[index]) and not _held_elsewhere(items, index)


def as_version_list(versions: Sequence[PaneVersion]) -> VersionList:
    """`versions` as a VersionList (itself when it is one)."""
    return versions if isinstance(versions, VersionList) else VersionList(versions)
