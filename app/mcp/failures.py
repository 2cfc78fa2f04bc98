"""How an MCP server's failures are told: one sentence for an exception (inside anyio's exception groups), whether
a failure means the connection closed, and the tail of a stdio server's stderr that goes with the message."""

from __future__ import annotations

STDERR_TAIL_CHARS = 2000


def describe(exc: BaseException) -> str:
    """One sentence for an exception, looking inside exception groups (anyio's task groups raise those)."""
    exc = _innermost(exc)
    if isinstance(exc, FileNotFoundError):
        return f"the command was not found ({exc.filename or exc})"
    text = str(exc) or type(exc).__name__
    error = getattr(exc, "error", None)
    if error is not None and getattr(error, "message", None):
        text = error.message
    return text if text != type(exc).__name__ else f"{text} (no message)"


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside exception groups (anyio's task groups raise those)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]
    return exc


def connection_closed(exc: BaseException) -> bool:
    """Whether a call failed because the server's connection closed (it crashed)."""
    from mcp_types import CONNECTION_CLOSED
    exc = _innermost(exc)
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == CONNECTION_CLOSED or isinstance(
        exc, (BrokenPipeError, ConnectionError, EOFError))


def stderr_tail(errlog) -> str:
    """The end of a stdio server's stderr (its temporary file), at most STDERR_TAIL_CHARS."""
    if errlog is None or errlog.closed:
        return ""
    try:
        errlog.flush()
        errlog.seek(0, 2)
        size = errlog.tell()
        errlog.seek(max(0, size - STDERR_TAIL_CHARS * 2))
        return errlog.read()[-STDERR_TAIL_CHARS:].strip()
    except (OSError, ValueError):
        return ""


def with_tail(tail: str) -> str:
    return f"\nits stderr ends with:\n{tail}" if tail else ""
