"""The comparison itself, Qt-free: panes as data, conversations, results, save/load/export, and the runner
that submits panes to a backend. The window and the CLI share it."""

from app.session import backends, compare, conversation, diff, export, store, sweep
from app.session.backends import MAIN, BackendRegistry, BackendSpec
from app.session.model import BUSY_STATES, PaneResult, PaneSpec, RunState, Session
from app.session.runner import AlreadyRunning, SessionRunner
from app.session.store import SessionFileError

__all__ = ["BUSY_STATES", "MAIN", "AlreadyRunning", "BackendRegistry", "BackendSpec", "PaneResult", "PaneSpec",
           "RunState", "Session", "SessionFileError", "SessionRunner", "backends", "compare", "conversation", "diff",
           "export", "store", "sweep"]
