"""`Session`: the evented session model plus its file methods (the contract names `save`, `load`,
`to_markdown`). It sits above `store` and `export`, which work on `SessionModel`, so neither imports it back."""

from __future__ import annotations

from dataclasses import dataclass

from app.session import images
from app.session.export import to_markdown
from app.session.schema import image_refs
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

    def missing_images(self, path=None) -> str | None:
        """A sentence naming the images the session's messages show but whose files were not found (None: all
        are here); `path`, the session file, names the folder they were looked for in."""
        return images.describe_missing(image_refs(self), images.folder_for(path) if path else None)

    def to_markdown(self) -> str:
        return to_markdown(self)
