"""How a server failure reads: one sentence naming the URL and the cause, for the request it ended."""

from __future__ import annotations

import openai

CONNECT_TIMEOUT_S, READ_TIMEOUT_S = 5.0, 60.0


def describe_error(url: str, exc: Exception) -> str:
    """One sentence naming the server and what went wrong."""
    if isinstance(exc, openai.APITimeoutError):
        return f"{url} stopped answering (no data for {READ_TIMEOUT_S:.0f} s)"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__ or exc
        return f"cannot reach {url}: {cause}"
    if isinstance(exc, openai.APIStatusError):
        what = {401: "refused the API key", 403: "refused access (forbidden)", 404: "has no such path or model",
                429: "is rate limiting (too many requests)", 503: "is unavailable or overloaded"}
        reason = what.get(exc.status_code, "answered with an error")
        detail = getattr(exc, "message", "") or str(exc)
        return f"{url} {reason} (HTTP {exc.status_code}): {detail}"
    if isinstance(exc, openai.APIResponseValidationError | ValueError | KeyError | TypeError):
        return f"{url} sent a response that is not valid OpenAI streaming data: {exc}"
    return f"{url}: {type(exc).__name__}: {exc}"
