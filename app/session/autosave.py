"""Where the current session lives between launches, and how it comes back after a crash.

The autosave is written with the same crash-safe write as any session file. At start-up an unreadable autosave
is moved aside (kept for the user, never deleted) and the app starts with a clean session and a message.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from app.session.model import Session
from app.session.store import SessionFileError, load_session, move_aside, remove_stale_temps

APP_NAME = "Chorus"
AUTOSAVE_NAME = "autosave.chorus.json"
DATA_DIR_ENV = "CHORUS_DATA_DIR"  # overrides the platform's app-data folder (tests, portable installs)


def data_dir() -> Path:
    """The platform's per-user app-data folder for Chorus (e.g. ~/.local/share/Chorus on Linux)."""
    override = os.environ.get(DATA_DIR_ENV)
    return Path(override) if override else platformdirs.user_data_path(APP_NAME, appauthor=False)


def autosave_path() -> Path:
    return data_dir() / AUTOSAVE_NAME


def restore(path: Path | None = None) -> tuple[Session | None, str | None]:
    """(the saved session or None, a message for the user or None)."""
    path = path or autosave_path()
    if path.parent.exists():
        remove_stale_temps(path)  # a save the last run was killed in the middle of
    if not path.exists():
        return None, None
    try:
        return load_session(path), None
    except (SessionFileError, OSError) as exc:
        try:
            kept = move_aside(path)
        except OSError as move_error:
            return None, f"The last session could not be restored ({exc}) nor moved aside ({move_error})."
        return None, f"The last session could not be restored: {exc}. It was kept as {kept.name} in {kept.parent}."
