"""A pane's versions in the session file (app/session/versions.py), declared from the model's own fields: a
version's result is a Result as a pane's is (its tokens and log-probabilities included), its settings the
PaneSpec fields `versions.SETTINGS` names, typed as the pane's are.

Encoding is cheap for the versions that did not change: a packed version (version_list.py) is its encoding, a
held one's encoding is kept (by identity, until its result's text, state or figures move), so an autosave of a
session with a thousand versions encodes only the one that is streaming; versions read from a file stay packed as
they were read (`versions_loaded`).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from app.session.file_structs import dataclass_struct, given
from app.session.result import PaneResult, RunState
from app.session.result_file import Result, result_from_file, result_to_file, state_from_file
from app.session.state import PaneSpec
from app.session.version_list import Deflated, VersionList, as_version_list
from app.session.versions import SETTINGS, PaneVersion

Settings = dataclass_struct(PaneSpec, "Settings", {"stop": list[str]},
                            skip=frozenset(f.name for f in dataclasses.fields(PaneSpec) if f.name not in SETTINGS))


class Version(msgspec.Struct, kw_only=True):
    result: Result | UnsetType = UNSET
    messages: list[dict[str, Any]] = []
    settings: Settings | UnsetType = UNSET  # type: ignore[valid-type]
    started_at: str = ""


def version_from_file(raw: Version) -> PaneVersion:
    result = result_from_file(raw.result) if raw.result is not UNSET else None
    return PaneVersion(**({"result": result} if result is not None else {}), messages=list(raw.messages),
                       settings=_settings_from_file(raw.settings), started_at=raw.started_at)


def _settings_from_file(raw) -> dict:
    settings = given(raw) if raw is not UNSET else {}
    if "stop" in settings:
        settings["stop"] = tuple(settings["stop"])
    return settings


def version_to_file(version: PaneVersion) -> Version:
    settings = {name: value for name, value in version.settings.items() if name in Settings.__struct_fields__}
    if "stop" in settings:
        settings["stop"] = list(settings["stop"])
    return Version(result=result_to_file(version.result), messages=version.messages, settings=Settings(**settings),
                   started_at=version.started_at)


class _StateOnly(msgspec.Struct):
    state: str = RunState.IDLE.value


class _Summary(msgspec.Struct):
    """What a list of versions shows of each: read from its bytes, the rest skipped."""

    started_at: str = ""
    result: _StateOnly = msgspec.field(default_factory=_StateOnly)


class _Setup(msgspec.Struct):
    """What a version ran with: read from its bytes, its result skipped."""

    messages: list[dict[str, Any]] = []
    settings: Settings | UnsetType = UNSET  # type: ignore[valid-type]
    started_at: str = ""


class _Codec:
    """A version as the bytes of its file form and back (what a VersionList keeps of a packed version)."""

    def __init__(self):
        self._decoder = msgspec.json.Decoder(Version)
        self._summaries = msgspec.json.Decoder(_Summary)
        self._setups = msgspec.json.Decoder(_Setup)

    def summary(self, data: bytes) -> tuple[str, str]:
        """(started_at, state) as `decode` would make them (a run cut short by a crash reads "interrupted")."""
        read = self._summaries.decode(data)
        return read.started_at, state_from_file(read.result.state).value

    def setup(self, data: bytes) -> PaneVersion:
        """The version without its result (an empty one): its messages and settings as `decode` reads them."""
        raw = self._setups.decode(data)
        return PaneVersion(_UNREAD, messages=list(raw.messages), settings=_settings_from_file(raw.settings),
                           started_at=raw.started_at)

    def encode(self, version: PaneVersion) -> bytes:
        return msgspec.json.encode(version_to_file(version))

    def decode(self, data: bytes) -> PaneVersion:
        """The version again, its encoding kept (`_encoded`) until it changes."""
        version = version_from_file(self._decoder.decode(data))
        _kept[version] = (_key(version), data)
        return version


CODEC = _Codec()
_UNREAD = PaneResult()  # the result of every version `setup` reads (empty, shared: a version read so is only read)

# A held version's encoding while it has not changed, by identity (its result's id and the fields that move while
# it streams; the result itself is not held here, or the version list could never see it unheld and pack it).
_kept: weakref.WeakKeyDictionary[PaneVersion, tuple[tuple, bytes]] = weakref.WeakKeyDictionary()


def _key(version: PaneVersion) -> tuple:
    r = version.result
    return (id(r), r.state, r.text, r.reasoning, r.finish_reason, r.error, r.generated_tokens, r.format_note,
            len(r.token_ids), len(r.token_logprobs or ()), len(r.tool_calls))


def _encoded(version: PaneVersion) -> bytes:
    """The version's encoding, reused while it has not changed (a streaming version is encoded anew)."""
    key = _key(version)
    kept = _kept.get(version)
    if kept is None or kept[0] != key or version.result.busy:
        kept = _kept[version] = (key, CODEC.encode(version))
    return kept[1]


def versions_loaded(raws: list[Version] | msgspec.Raw) -> VersionList:
    """A pane's versions read from a file, each kept packed as what was read: opening a session makes no
    PaneVersion, and its first autosave encodes none of them again (`bench --versions`, `bench --panes`). A
    pane's file form made in memory (`pane_to_file`) holds them still encoded."""
    if isinstance(raws, msgspec.Raw):
        raws = msgspec.json.decode(raws, type=list[Version])
    return VersionList([msgspec.json.encode(raw) for raw in raws], CODEC)


def versions_pieces(kept: Sequence[PaneVersion]) -> list[bytes | Deflated]:
    """A pane's versions as the encoded JSON array, in pieces to write one after another (`bytes()` of each),
    packing those that can be (version_list.py)."""
    return as_version_list(kept).settle(CODEC, _encoded)


def versions_raw(kept: Sequence[PaneVersion]) -> msgspec.Raw:
    """A pane's versions as the encoded JSON array, in one piece."""
    return msgspec.Raw(b"".join(map(bytes, versions_pieces(kept))))
