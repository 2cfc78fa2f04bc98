"""Compatibility alias: evaluations are `app.evaluate` (a layer above the session). New code imports
`app.evaluate`; this name keeps working for scripts written against `app.session.evaluate`."""

from app.evaluate import *  # noqa: F403
from app.evaluate import __all__  # noqa: F401
