"""The session file format, declared once (msgspec): what a `*.chorus.json` file may hold, field by field.

A pane's and a result's fields are derived from their dataclasses (`file_structs`), the evaluation's in
evaluation_file.py, the votes' in votes.py. Decoding validates every field's type; a wrong one is refused with
the field's path. Optional fields are UNSET when absent, so the defaults stay the model's own (state.py).
Where the meaning is unambiguous a value is clamped instead of refused (a rating of 99 is 5, 9 columns are 4).
Version 1 files (Chorus before pane numbers) load too: their panes are numbered in order, their
`view.file`/`view.unsaved` become the `autosave` record.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from app.engine import limits
from app.mcp.replay import RecordedCall
from app.mcp.secrets import blank_entries
from app.session import evaluation_file, versions
from app.session.evaluation import Evaluation
from app.session.evaluation_file import EvaluationFile
from app.session.file_structs import dataclass_struct, given
from app.session.images import ImageRef
from app.session.result_file import Result, result_from_file, result_to_file
from app.session.state import COLUMNS, PaneSpec, ViewSettings
from app.session.version_file import Version, versions_loaded, versions_pieces, versions_raw
from app.session.version_list import as_version_list
from app.session.votes import Vote

FORMAT = "chorus-session"
VERSION = 2
SUFFIX = ".chorus.json"
RATING = limits.Limit(1, 5, 3)


class Header(msgspec.Struct):
    """Read first, so a file from a newer Chorus is named as such before its fields are judged."""

    format: object = None
    version: object = None


class ToolCall(msgspec.Struct):
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


class Turn(msgspec.Struct):
    role: Literal["user", "assistant", "tool"]
    content: str
    images: list[ImageRef] | UnsetType = UNSET  # by content hash; the files are beside the session (images.py)
    tool_calls: list[ToolCall] | UnsetType = UNSET  # an assistant turn's calls
    tool_call_id: str | UnsetType = UNSET  # a tool turn: the call it answers
    name: str | UnsetType = UNSET  # a tool turn: the function that answered


def turn_from_file(t: Turn) -> dict:
    turn = {"role": t.role, "content": t.content}
    if t.images:
        turn["images"] = tuple(t.images)
    if t.tool_calls:
        turn["tool_calls"] = [msgspec.structs.asdict(c) for c in t.tool_calls]
    turn.update({k: getattr(t, k) for k in ("tool_call_id", "name") if getattr(t, k) is not UNSET})
    return turn


def turn_to_file(turn: dict) -> Turn:
    calls = [ToolCall(c.get("id", ""), c.get("name", ""), c.get("arguments", "")) for c in turn.get("tool_calls", ())]
    return Turn(turn["role"], turn["content"], list(turn.get("images", ())) or UNSET, calls or UNSET,
                turn.get("tool_call_id", UNSET), turn.get("name", UNSET))


# A pane's fields, each optional (absent: the model's default), as PaneSpec declares them.
Pane = dataclass_struct(PaneSpec, "Pane", {"turns": list[Turn], "stop": list[str], "result": Result,
                                          "versions": list[Version], "draft_images": list[ImageRef]})


class View(msgspec.Struct):
    columns: int | None | UnsetType = UNSET
    column_group: str | None | UnsetType = UNSET
    file: str | None | UnsetType = UNSET  # version 1 kept the autosave record here
    unsaved: bool | UnsetType = UNSET


class Autosave(msgspec.Struct):
    """Only in the autosave: the file the session belongs to, and whether it has changes that file lacks."""

    file: str | None = None
    unsaved: bool = False


class McpFile(msgspec.Struct, omit_defaults=True):
    servers: dict[str, dict] = {}  # NAME -> an mcpServers entry, env and header values blanked
    records: list[RecordedCall] = []


class SessionFile(msgspec.Struct):
    format: Literal["chorus-session"]
    version: int
    saved_at: str | None | UnsetType = UNSET
    view: View | UnsetType = UNSET
    panes: list[Pane] | UnsetType = UNSET
    next_number: int | UnsetType = UNSET
    autosave: Autosave | None | UnsetType = UNSET
    votes: list[Vote] | UnsetType = UNSET  # the arena's votes (their own declaration: app/session/votes.py)
    evaluation: EvaluationFile | None | UnsetType = UNSET  # its own declaration: app/session/evaluation_file.py
    group_mocks: dict[str, str] | UnsetType = UNSET  # group id -> its mock results as written (absent: none)
    mcp: McpFile | UnsetType = UNSET  # MCP servers (no secrets) and recorded tool answers (absent: none)



# --- file → model --------------------------------------------------------------------------------------------
def pane_from_file(raw: Pane) -> PaneSpec:
    """Raises ValueError for values no pane can hold (the model's own checks)."""
    fields = given(raw)
    if "turns" in fields:
        fields["turns"] = [turn_from_file(t) for t in fields["turns"]]
    if "stop" in fields:
        fields["stop"] = tuple(fields["stop"])
    if fields.get("rating") is not None:
        fields["rating"] = RATING.clamp(fields["rating"])
    if "max_tokens" in fields:
        fields["max_tokens"] = limits.MAX_TOKENS.clamp(fields["max_tokens"])
    if fields.get("editing") is not None and not 0 <= fields["editing"] < len(fields.get("turns", [])):
        fields["editing"] = None  # it pointed past the conversation: nothing is being edited
    if not fields.get("id"):
        fields.pop("id", None)
    if "result" in fields:
        fields["result"] = result_from_file(fields["result"])
    if "versions" in fields:
        fields["versions"] = versions_loaded(fields["versions"])
    if fields.get("current") is not None and not 0 <= fields["current"] < len(fields.get("versions", [])):
        fields["current"] = None  # it pointed past the versions: none is current
    pane = PaneSpec(**fields)
    versions.recover(pane)  # a run cut short by a crash gives back the reply it was replacing
    return pane


def image_refs(session) -> list[ImageRef]:
    """Every image the session's panes name (turns, drafts and kept versions), in order, each once."""
    refs = [r for p in session.panes for t in p.turns for r in t.get("images", ())]
    kept = [r for p in session.panes for r in as_version_list(p.versions).image_refs()]
    return list(dict.fromkeys(refs + [r for p in session.panes for r in p.draft_images] + kept))


def view_from_file(raw: View | UnsetType) -> ViewSettings:
    if raw is UNSET:
        return ViewSettings()
    fields = {k: v for k, v in given(raw).items() if k in ("columns", "column_group") and v is not None}
    if "columns" in fields:
        fields["columns"] = COLUMNS.clamp(fields["columns"])
    return ViewSettings(**fields)


def evaluation_from_file(raw: EvaluationFile | None | UnsetType) -> Evaluation | None:
    """Raises ValueError for an evaluation this version cannot hold."""
    return None if raw is UNSET or raw is None else evaluation_file.evaluation_from_file(raw)


def autosave_from_file(data: SessionFile) -> Autosave:
    if isinstance(data.autosave, Autosave):
        return data.autosave
    view = data.view if data.view is not UNSET else View()
    return Autosave(file=view.file or None, unsaved=bool(view.unsaved) if view.unsaved is not UNSET else False)


# --- model → file --------------------------------------------------------------------------------------------
# Where a pane's versions go when they are kept apart (`session_to_file(versions_apart=...)`): a byte no JSON
# msgspec writes holds (it escapes control characters in strings), so the text splits at each pane's versions.
VERSIONS_APART = b"\x00"


def pane_to_file(pane: PaneSpec, versions_apart: list[list] | None = None) -> Pane:
    """`versions_apart`: the pane's versions are appended to it, in pieces, and the file form holds
    VERSIONS_APART in their place."""
    fields = {name: getattr(pane, name) for name in Pane.__struct_fields__}
    if versions_apart is None:
        kept = versions_raw(pane.versions)
    else:
        versions_apart.append(versions_pieces(pane.versions))
        kept = msgspec.Raw(VERSIONS_APART)
    fields.update(turns=[turn_to_file(t) for t in pane.turns], stop=list(pane.stop),
                  result=result_to_file(pane.result), versions=kept, draft_images=list(pane.draft_images) or UNSET)
    return Pane(**fields)


def session_to_file(session, saved_at: str, autosave: Autosave | None = None,
                    versions_apart: list[list] | None = None) -> SessionFile:
    """`session`: a SessionModel (anything with panes, view and next_number). `versions_apart`: see
    `pane_to_file`."""
    evaluation = evaluation_file.evaluation_to_file(session.evaluation) if session.evaluation is not None else None
    return SessionFile(format=FORMAT, version=VERSION, saved_at=saved_at,
                       view=View(columns=session.view.columns, column_group=session.view.column_group),
                       panes=[pane_to_file(p, versions_apart) for p in session.panes], next_number=session.next_number,
                       autosave=autosave if autosave is not None else UNSET, votes=list(session.votes),
                       evaluation=evaluation, group_mocks=group_mocks_to_file(session), mcp=mcp_to_file(session))


def mcp_to_file(session) -> McpFile | UnsetType:
    """The session's MCP servers without their secrets, and its recorded answers (UNSET when none)."""
    servers, records = getattr(session, "mcp_servers", {}), getattr(session, "mcp_records", [])
    return McpFile(blank_entries(servers), list(records)) if servers or records else UNSET


def group_mocks_to_file(session) -> dict[str, str] | UnsetType:
    """The mock results of the groups that still have panes (UNSET when none: older Chorus reads the file)."""
    kept = {group: text for group, text in session.group_mocks.items() if text and session.group(group)}
    return kept or UNSET
