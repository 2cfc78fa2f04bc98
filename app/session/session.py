"""`Session`: the evented session model plus its file methods (the contract names `save`, `load`,
`to_markdown`). It sits above `store` and `export`, which work on `SessionModel`, so neither imports it back."""

from __future__ import annotations

from dataclasses import dataclass

from app.session.export import to_markdown
from app.session.state import SessionModel
from app.session.store import read_session, save_session


@dataclass
class Session(SessionModel):
    def save(self, path) -> None:
        """Write the session file (crash-safe: temporary file, fsync, rename)."""
        save_session(self, path)

    @classmethod
    def load(cls, path) -> Session:
        """Read a session file; raises SessionFileError (or OSError) and changes nothing on failure."""
        return cls(**read_session(path))

    def to_markdown(self) -> str:
        return to_markdown(self)
