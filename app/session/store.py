"""Sessions on disk: the schema's format (app/session/schema.py), written crash-safely, read defensively.

A write goes to a temporary file in the same folder (created with the user's umask, like any editor's file),
is fsynced, then renamed over the target (and the folder fsynced), so a crash at any moment leaves the old
file or the new one, never a mix. A file that cannot be read raises SessionFileError with a sentence a user
can act on — naming the field for a wrong value — and nothing in memory changes; the autosave's reader moves
such a file aside (never deletes it). A session's images are written beside it first (`talk.images/`,
app/session/images.py), so a session file never names an image its folder lacks; reading loads them, and one
that is missing is left out (`images.describe_missing` names it) while the rest loads.
"""

from __future__ import annotations

import codecs
import gc
import json
import re
import time
from pathlib import Path

import msgspec

from app.files import move_aside, remove_stale_temps, write_atomic
from app.session import images, schema
from app.session.state import SessionModel

__all__ = ["FORMAT", "SUFFIX", "VERSION", "SessionFileError", "decode", "encode", "move_aside", "read_autosave",
           "read_session", "remove_stale_temps", "save_session", "write_atomic"]

FORMAT, VERSION, SUFFIX = schema.FORMAT, schema.VERSION, schema.SUFFIX


class SessionFileError(ValueError):
    """The file is not a session this version can read; the message says why."""


# --- decoding -------------------------------------------------------------------------------------------------
def _where(path: str) -> str:
    """`$.panes[0].sampling` → "pane 1, sampling" (what a user can find in the window)."""
    words = []
    for part in path.removeprefix("$").replace("]", "").split("."):
        for i, piece in enumerate(part.split("[")):
            if not piece:
                continue
            if i and piece.isdigit():
                words[-1] = f"{words[-1].rstrip('s')} {int(piece) + 1}"
            else:
                words.append(piece)
    return ", ".join(words) or "the file"


_KINDS = {"str": "text", "int": "a whole number", "float": "a number", "bool": "true or false", "null": "null",
          "array": "a list", "object": "an object"}


def _kinds(names: str) -> str:
    return " or ".join(_KINDS.get(name.strip(), name.strip()) for name in names.split("|"))


def _validation_message(exc: msgspec.ValidationError, at: str = "$") -> str:
    """msgspec's "Expected `str`, got `int` - at `$.panes[0].system`" as "pane 1, system: must be text, not a
    whole number"; `at`: where the decoded text sits in the file (a pane decoded on its own: `$.panes[0]`)."""
    what, _, path = str(exc).rpartition(" - at `")
    if not what:
        if at == "$":
            return str(exc)
        what, path = str(exc), "$`"
    path = at + path.removeprefix("$")
    match = re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)`", what)
    if match:
        what = f"must be {_kinds(match[1])}, not {_kinds(match[2])}"
    elif what.startswith("Invalid enum value "):
        what = f"{what.removeprefix('Invalid enum value ')} is not one of the allowed values"
    return f"{_where(path.rstrip('`'))}: {what}"


def _surrogate_path(value, path: str = "$") -> str | None:
    """Where the first string that cannot be UTF-8 encoded (a lone surrogate escape) sits in plain data."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        here = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"
        if isinstance(key, str) and _surrogate_path(key):
            return here
        found = _surrogate_path(item, here)
        if found:
            return found
    return None


def decode(text: str | bytes) -> dict:
    """The Session fields (panes, view, next_number) a file's text (or its UTF-8 bytes) holds, plus its `autosave`
    record; raises SessionFileError saying why (without the file name). Python's cyclic collector is paused
    meanwhile: a file with 1,000 versions builds ~350,000 objects, and its passes over them took two thirds of the
    open time (0.84-1.12 s with it, 0.28-0.30 s without; `bench --versions`). It is re-enabled however decoding
    ends."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _decode(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    finally:
        if was_enabled:
            gc.enable()


def _decode(raw: bytes) -> dict:
    # One pass over the whole file, the header checked from it; only a file its fields refuse is read again for
    # its header alone, so a newer Chorus's file is named as such before its fields are judged. (Each pass is one
    # decoder call, which holds the GIL, and so the GUI thread, for its whole length: ~20 ms a pass at 20 MB.)
    try:
        data = msgspec.json.decode(raw, type=_SessionFilePanesRaw)
    except msgspec.ValidationError as exc:
        try:
            header = msgspec.json.decode(raw, type=schema.Header)
        except msgspec.ValidationError:
            raise SessionFileError("this is not a Chorus session file") from exc
        _check_header(header)
        raise SessionFileError(_validation_message(exc)) from exc
    except msgspec.DecodeError as exc:
        raise SessionFileError(_syntax_problem(raw.decode("utf-8", "surrogatepass"), exc)) from exc
    _check_header(data)
    panes = []
    for i, pane_text in enumerate(data.panes if data.panes is not msgspec.UNSET else []):
        try:
            pane = msgspec.json.decode(pane_text, type=schema.Pane)
        except msgspec.ValidationError as exc:
            raise SessionFileError(_validation_message(exc, f"$.panes[{i}]")) from exc
        try:
            panes.append(schema.pane_from_file(pane))
        except (TypeError, ValueError) as exc:
            raise SessionFileError(f"pane {i + 1}: {exc}") from exc
    if data.version < 2:  # version 1 had no pane numbers: number them in order
        for number, pane in enumerate(panes, start=1):
            pane.number = number
    numbers = [p.number for p in panes if p.number is not None]
    if len(set(numbers)) != len(numbers) or any(n < 1 for n in numbers):
        raise SessionFileError("pane numbers are not unique positive whole numbers")
    fields = {"panes": panes, "view": schema.view_from_file(data.view)}
    if data.next_number is not msgspec.UNSET:
        fields["next_number"] = max(data.next_number, 1)
    if data.votes is not msgspec.UNSET:
        fields["votes"] = list(data.votes)
    if data.group_mocks is not msgspec.UNSET:
        fields["group_mocks"] = dict(data.group_mocks)
    if data.mcp is not msgspec.UNSET:  # read only: nothing starts until the user agrees (app/mcp)
        fields.update(mcp_servers=dict(data.mcp.servers), mcp_records=list(data.mcp.records))
    try:
        fields["evaluation"] = schema.evaluation_from_file(data.evaluation)
    except (TypeError, ValueError) as exc:
        raise SessionFileError(f"evaluation: {str(exc).splitlines()[0]}") from exc
    return {**fields, "autosave": schema.autosave_from_file(data)}


# The file's fields with its panes left as text, each decoded on its own: the decoder holds the GIL for the whole
# of one call, so decoding a large session in one (20 MB: ~100 ms) on the worker held the GUI thread as long.
_SessionFilePanesRaw = msgspec.defstruct("SessionFilePanesRaw", [
    (f.name, list[msgspec.Raw] | msgspec.UnsetType if f.name == "panes" else f.type)
    + (() if f.default is msgspec.NODEFAULT else (f.default,)) for f in msgspec.structs.fields(schema.SessionFile)])


def _check_header(header) -> None:
    """Raises SessionFileError unless the file's `format` and `version` (read from the whole, or alone) are a
    Chorus session this version reads."""
    if header.format != FORMAT:
        raise SessionFileError("this is not a Chorus session file")
    version = header.version
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SessionFileError(f"its format version {version!r} is not a version Chorus writes")
    if version > VERSION:
        raise SessionFileError(f"it was saved by a newer Chorus (session format {version}); this version "
                               f"reads format {VERSION} — update Chorus to open it")


def _syntax_problem(text: str, exc: msgspec.DecodeError) -> str:
    """Why the text is not JSON, in words: truncated, a lone surrogate (named by field), or where it breaks."""
    try:
        plain = json.loads(text)
    except json.JSONDecodeError as err:
        # The text stops inside a value: at its very end, or in a string that never closes (the error then
        # points at the string's start).
        cut = err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated string")
        return "it ends early (truncated?)" if cut else f"it is not valid JSON (line {err.lineno})"
    where = _surrogate_path(plain)
    if where:
        return f"{_where(where)}: holds text that cannot be encoded (a lone surrogate escape)"
    return f"it is not valid JSON ({exc})"


def _is_utf8(raw: bytes, chunk: int = 1 << 20) -> bool:
    """Whether the bytes are UTF-8 text, checked a megabyte at a time: one call over a 20 MB file held the GIL, and
    so the GUI thread beside the worker opening it, for its whole length (the decoder does not check the bytes of
    fields it skips)."""
    check, view = codecs.getincrementaldecoder("utf-8")(), memoryview(raw)
    try:
        for start in range(0, len(raw), chunk):
            check.decode(view[start:start + chunk])
        check.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def read_session(path: str | Path) -> dict:
    """The Session fields in a file (`Session(**read_session(path))`); raises SessionFileError (or OSError for
    an unreadable file). The autosave record is dropped: see `read_autosave`."""
    fields = read_autosave(path)
    fields.pop("autosave")
    return fields


def read_autosave(path: str | Path) -> dict:
    """Like read_session, plus "autosave": the file the session belongs to and whether it had unsaved changes."""
    path = Path(path)
    raw = path.read_bytes()
    if not _is_utf8(raw):
        raise SessionFileError(f"{path.name} is not a Chorus session file (not text)")
    try:
        fields = decode(raw)
    except SessionFileError as exc:
        raise SessionFileError(f"{path.name} cannot be opened: {exc}") from exc
    images.load_from(images.folder_for(path), schema.image_refs(_Panes(fields["panes"])))
    return fields


# --- encoding and files ---------------------------------------------------------------------------------------
def encode_pieces(session: SessionModel, autosave: schema.Autosave | None = None) -> list:
    """The file's JSON, unformatted, in pieces to be written one after another (`bytes()` of each: a pane's
    joined versions are deflated blocks): the panes' versions, most of a long session's bytes, are their lists'
    own pieces (app/session/version_list.py), so an autosave neither encodes nor copies them on the GUI thread.
    Raises SessionFileError if a text in the session cannot be encoded."""
    apart: list[list] = []
    data = schema.session_to_file(session, time.strftime("%Y-%m-%dT%H:%M:%S%z"), autosave, versions_apart=apart)
    try:
        text = msgspec.json.encode(data)  # a lone surrogate raises UnicodeEncodeError: no invalid UTF-8 out
    except (UnicodeEncodeError, msgspec.EncodeError) as exc:
        raise SessionFileError(f"the session holds text that cannot be saved: {exc}") from exc
    around = text.split(schema.VERSIONS_APART)
    if len(around) != len(apart) + 1:
        raise SessionFileError("the session's versions could not be placed in its file")
    pieces = [around[0]]
    for versions, after in zip(apart, around[1:], strict=True):
        pieces += versions
        pieces.append(after)
    return pieces


def encode_compact(session: SessionModel, autosave: schema.Autosave | None = None) -> bytes:
    """The file's JSON, unformatted, in one piece (the costly formatting is `formatted`'s, which may run on
    another thread). Raises SessionFileError if a text in the session cannot be encoded."""
    return b"".join(map(bytes, encode_pieces(session, autosave)))


def formatted(compact: bytes) -> bytes:
    """`encode_compact`'s JSON as the file holds it: indented, one field a line, so it diffs well."""
    return msgspec.json.format(compact, indent=1)


def encode(session: SessionModel, autosave: schema.Autosave | None = None) -> str:
    """The file's text. Raises SessionFileError if a text in the session cannot be encoded."""
    return formatted(encode_compact(session, autosave)).decode("utf-8")


def save_session(session: SessionModel, path: str | Path, autosave: schema.Autosave | None = None) -> None:
    """The images first (each file once), then the session file. Raises OSError, SessionFileError."""
    text = encode(session, autosave)
    save_images(schema.image_refs(session), path)
    write_atomic(path, text)


def save_images(refs: list[images.ImageRef], path: str | Path) -> None:
    """Write the images a session file at `path` names into its images folder (those it lacks)."""
    if refs:
        images.save_to(images.folder_for(path), refs)


class _Panes:
    def __init__(self, panes):
        self.panes = panes
