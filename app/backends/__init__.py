"""Where tokens come from, behind one protocol: the local engine (LocalBackend). Qt-free."""

from app.backends.base import Backend
from app.backends.local import LocalBackend

__all__ = ["Backend", "LocalBackend"]
