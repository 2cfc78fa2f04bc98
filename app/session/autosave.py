"""Where the current session lives between launches, and how it comes back after a crash.

The autosave is written with the same crash-safe write as any session file, plus a record of the file the
session belongs to and whether it had changes that file lacks. At start-up an autosave that cannot be used —
unreadable, refused by the schema, or failing in any other way — is moved aside (kept for the user, never
deleted) and the app starts with a clean session and a message: launch never crashes on an autosave.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from app.session import store
from app.session.schema import Autosave
from app.session.session import Session

log = logging.getLogger("chorus.session.autosave")
APP_NAME = "Chorus"
AUTOSAVE_NAME = "autosave.chorus.json"
DATA_DIR_ENV = "CHORUS_DATA_DIR"  # overrides the platform's app-data folder (tests, portable installs)


def data_dir() -> Path:
    """The platform's per-user app-data folder for Chorus (e.g. ~/.local/share/Chorus on Linux)."""
    override = os.environ.get(DATA_DIR_ENV)
    return Path(override) if override else platformdirs.user_data_path(APP_NAME, appauthor=False)


def autosave_path() -> Path:
    return data_dir() / AUTOSAVE_NAME


@dataclass
class Restored:
    """What the last run left: its session (None: nothing, or it could not be used), the file that session
    belongs to, whether it had unsaved changes, and a message for the user (None: nothing to say)."""

    session: Session | None = None
    file: str | None = None
    unsaved: bool = False
    message: str | None = None


def write(session: Session, path: Path, file: str | None, unsaved: bool) -> None:
    store.save_session(session, path, Autosave(file=file, unsaved=unsaved))


def restore(path: Path | None = None) -> Restored:
    path = path or autosave_path()
    if path.parent.exists():
        store.remove_stale_temps(path)  # a save the last run was killed in the middle of
    if not path.exists():
        return Restored()
    try:
        fields = store.read_autosave(path)
        record = fields.pop("autosave")
        return Restored(Session(**fields), record.file, record.unsaved)
    except Exception as exc:  # noqa: BLE001 — whatever is wrong with it, the app must start
        if not isinstance(exc, store.SessionFileError | OSError):
            log.exception("the autosave %s could not be used", path)
        reason = str(exc) if isinstance(exc, store.SessionFileError | OSError) else f"{type(exc).__name__}: {exc}"
        try:
            kept = store.move_aside(path)
        except OSError as move_error:
            return Restored(message=f"The last session could not be restored ({reason}) nor moved aside "
                                    f"({move_error}).")
        return Restored(message=f"The last session could not be restored: {reason}. It was kept as {kept.name} "
                                f"in {kept.parent}.")
