"""A pane's versions in the session file (app/session/versions.py), declared from the model's own fields: a
version's result is a Result as a pane's is (its tokens and log-probabilities included), its settings the
PaneSpec fields `versions.SETTINGS` names, typed as the pane's are.

Encoding is cheap for the versions that did not change: an ended version's encoding is kept (by identity, until
its result's text, state or figures move), so an autosave of a session with a thousand versions encodes only
the one that is streaming; a version read from a file keeps the encoding it was read from (`version_loaded`).
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from app.session.file_structs import dataclass_struct, given
from app.session.result_file import Result, result_from_file, result_to_file
from app.session.state import PaneSpec
from app.session.versions import SETTINGS, PaneVersion

Settings = dataclass_struct(PaneSpec, "Settings", {"stop": list[str]},
                            skip=frozenset(f.name for f in dataclasses.fields(PaneSpec) if f.name not in SETTINGS))


class Version(msgspec.Struct, kw_only=True):
    result: Result | UnsetType = UNSET
    messages: list[dict[str, Any]] = []
    settings: Settings | UnsetType = UNSET  # type: ignore[valid-type]
    started_at: str = ""


def version_from_file(raw: Version) -> PaneVersion:
    settings = given(raw.settings) if raw.settings is not UNSET else {}
    if "stop" in settings:
        settings["stop"] = tuple(settings["stop"])
    result = result_from_file(raw.result) if raw.result is not UNSET else None
    return PaneVersion(**({"result": result} if result is not None else {}), messages=list(raw.messages),
                       settings=settings, started_at=raw.started_at)


def version_to_file(version: PaneVersion) -> Version:
    settings = {name: value for name, value in version.settings.items() if name in Settings.__struct_fields__}
    if "stop" in settings:
        settings["stop"] = list(settings["stop"])
    return Version(result=result_to_file(version.result), messages=version.messages, settings=Settings(**settings),
                   started_at=version.started_at)


_kept: weakref.WeakKeyDictionary[PaneVersion, tuple[tuple, msgspec.Raw]] = weakref.WeakKeyDictionary()


def _key(version: PaneVersion) -> tuple:
    r = version.result
    return (r, r.state, r.text, r.reasoning, r.finish_reason, r.error, r.generated_tokens, r.format_note,
            len(r.token_ids), len(r.token_logprobs or ()), len(r.tool_calls))


def version_loaded(raw: Version) -> PaneVersion:
    """A version read from a file, its encoding kept from what was read: the first autosave after opening a
    session re-encodes none of its versions (a thousand took 70-300 ms of the GUI thread, `bench --versions`)."""
    version = version_from_file(raw)
    if version.result is not None:
        _kept[version] = (_key(version), msgspec.Raw(msgspec.json.encode(raw)))
    return version


def version_raw(version: PaneVersion) -> msgspec.Raw:
    """The version as encoded JSON, reused while it has not changed (a streaming version is encoded anew)."""
    key = _key(version)
    kept = _kept.get(version)
    if kept is None or kept[0][0] is not key[0] or kept[0][1:] != key[1:] or version.result.busy:
        kept = _kept[version] = (key, msgspec.Raw(msgspec.json.encode(version_to_file(version))))
    return kept[1]
