"""Sessions on disk: one versioned JSON format, written crash-safely, read defensively.

A write goes to a temporary file in the same folder, is fsynced, then renamed over the target (and the folder
fsynced), so a crash at any moment leaves the old file or the new one, never a mix. A file that cannot be read
raises SessionFileError with a sentence a user can act on, and nothing in memory changes; the autosave's
reader moves such a file aside (never deletes it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path

from app.engine import SamplingParams, limits
from app.engine.logprobs import TokenLogprob
from app.session.model import BUSY_STATES, PaneResult, PaneSpec, RunState, Session
from app.session.output_format import OutputFormat

FORMAT = "chorus-session"
VERSION = 1
SUFFIX = ".chorus.json"
_RESULT_FIELDS = ("text", "token_ids", "finish_reason", "error", "error_kind", "prompt_tokens", "generated_tokens",
                  "cached_tokens", "queue_wait_s", "ttft_s", "decode_tps", "reply_prefix", "format_note",
                  "backend_note")


class SessionFileError(ValueError):
    """The file is not a session this version can read; the message says why."""


# --- to and from plain data ----------------------------------------------------------------------------------
def pane_to_dict(pane: PaneSpec) -> dict:
    result = {"state": pane.result.state.value, **{k: getattr(pane.result, k) for k in _RESULT_FIELDS}}
    if pane.result.token_logprobs is not None:
        result["token_logprobs"] = [entry.to_dict() for entry in pane.result.token_logprobs]
    return {"id": pane.id, "title": pane.title, "system": pane.system, "turns": pane.turns, "draft": pane.draft,
            "editing": pane.editing, "sampling": dataclasses.asdict(pane.sampling), "max_tokens": pane.max_tokens,
            "stop": list(pane.stop), "backend": pane.backend, "show_probabilities": pane.show_probabilities,
            "output_format": pane.output_format.to_dict(), "reply_prefix": pane.reply_prefix, "group": pane.group,
            "rating": pane.rating, "note": pane.note, "result": result}


def session_to_dict(session: Session) -> dict:
    return {"format": FORMAT, "version": VERSION, "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "view": session.view, "panes": [pane_to_dict(p) for p in session.panes]}


def pane_from_dict(data: dict) -> PaneSpec:
    raw = dict(data.get("result") or {})
    state = RunState(raw.pop("state", "idle"))
    if state in BUSY_STATES:  # it was running when the app stopped: keep what had arrived
        state = RunState.INTERRUPTED
    result = PaneResult(state=state, **{k: raw[k] for k in _RESULT_FIELDS if k in raw})
    if raw.get("token_logprobs") is not None:
        result.token_logprobs = [TokenLogprob.from_dict(entry) for entry in raw["token_logprobs"]]
    pane = PaneSpec(title=data.get("title", ""), system=data.get("system", ""),
                    turns=[dict(t) for t in data.get("turns", [])],
                    sampling=SamplingParams(**data.get("sampling", {})),
                    max_tokens=data.get("max_tokens", limits.MAX_TOKENS.default),
                    stop=tuple(data.get("stop", ())), backend=data.get("backend", "local"),
                    draft=data.get("draft", ""), editing=data.get("editing"), result=result,
                    show_probabilities=bool(data.get("show_probabilities", False)),
                    output_format=OutputFormat.from_dict(data.get("output_format")),
                    reply_prefix=str(data.get("reply_prefix", "")), group=data.get("group"),
                    rating=data.get("rating"), note=str(data.get("note", "")))
    if data.get("id"):
        pane.id = str(data["id"])
    return pane


def session_from_dict(data) -> Session:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SessionFileError("this is not a Chorus session file")
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise SessionFileError(f"it was saved by a newer Chorus (session format {version}); this version reads "
                               f"format {VERSION} — update Chorus to open it")
    panes = []
    for i, item in enumerate(data.get("panes", [])):
        try:
            panes.append(pane_from_dict(item))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise SessionFileError(f"pane {i + 1} is not valid: {exc}") from exc
    view = data.get("view")
    return Session(panes=panes, view=view if isinstance(view, dict) else {})


# --- files -------------------------------------------------------------------------------------------------
def write_atomic(path: str | Path, text: str) -> None:
    """Replace `path` with `text` so that a crash leaves either the old or the new content."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)  # the rename itself survives a power cut
    finally:
        os.close(dir_fd)


def save_session(session: Session, path: str | Path) -> None:
    write_atomic(path, json.dumps(session_to_dict(session), ensure_ascii=False, indent=1))


def load_session(path: str | Path) -> Session:
    """Read a session file; raises SessionFileError (or OSError for an unreadable file)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SessionFileError(f"{path.name} is not a Chorus session file (not text)") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # The text stops inside a value: at its very end, or in a string that never closes (the error then
        # points at the string's start).
        cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        why = "it ends early (truncated?)" if cut else f"it is not valid JSON (line {exc.lineno})"
        raise SessionFileError(f"{path.name} cannot be opened: {why}") from exc
    try:
        return session_from_dict(data)
    except SessionFileError as exc:
        raise SessionFileError(f"{path.name} cannot be opened: {exc}") from exc


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
