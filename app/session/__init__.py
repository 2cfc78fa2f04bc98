"""The comparison itself, Qt-free: the evented session model (panes, conversations, results, groups, ratings,
view), the controller every front end calls, the one runner that submits runs to backends, and the file
format. The window, `run` and `eval` share it."""

from app.session import backends, compare, conversation, diff, export, store, sweep
from app.session.backends import MAIN, BackendRegistry, BackendSpec
from app.session.controller import RunAll, SessionController
from app.session.model import BUSY_STATES, PaneResult, PaneSpec, RunState, SessionModel, ViewSettings
from app.session.runner import AlreadyRunning, SessionRunner
from app.session.session import Session
from app.session.store import SessionFileError

__all__ = ["BUSY_STATES", "MAIN", "AlreadyRunning", "BackendRegistry", "BackendSpec", "PaneResult", "PaneSpec",
           "RunAll", "RunState", "Session", "SessionController", "SessionFileError", "SessionModel",
           "SessionRunner", "ViewSettings", "backends", "compare", "conversation", "diff", "export", "store",
           "sweep"]
