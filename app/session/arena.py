"""Compatibility alias: the arena is `app.arena` (a layer above the session). `app.session.arena.Vote` and
`leaderboard` are contracts (shared/DESIGN.md), so this name keeps working; new code imports `app.arena`."""

from app.arena import *  # noqa: F403
from app.arena import __all__  # noqa: F401
