"""The comparison itself, Qt-free: the evented session model (panes, conversations, results, groups, ratings,
view, the arena's votes and an evaluation), the controller every front end calls, the one runner that submits
runs to backends, and the file format. The window, `run` and `eval` share it."""

from app.backends.registry import MAIN, BackendRegistry, BackendSpec
from app.session import compare, conversation, diff, export, store, sweep, versions
from app.session.controller import RunAll, SessionController
from app.session.runner import AlreadyRunning, SessionRunner
from app.session.session import Session
from app.session.state import BUSY_STATES, PaneResult, PaneSpec, RunState, SessionModel, ViewSettings
from app.session.store import SessionFileError

__all__ = ["BUSY_STATES", "MAIN", "AlreadyRunning", "BackendRegistry", "BackendSpec", "PaneResult", "PaneSpec",
           "RunAll", "RunState", "Session", "SessionController", "SessionFileError", "SessionModel",
           "SessionRunner", "ViewSettings", "compare", "conversation", "diff", "export", "store", "sweep", "versions"]
