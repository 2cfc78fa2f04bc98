"""A call's state on its card comes from what the result is (a denial, a timeout, another failure), never from the
words of its message: a tool whose own error text reads like a timeout is still an error."""

import concurrent.futures

from app.mcp import TIMEOUT, denied_result, error_result
from app.mcp.results import ToolResult
from app.session.mcp_calls import DENIED, DONE, ERROR, TIMED_OUT, outcome


def done(result: ToolResult) -> concurrent.futures.Future:
    future: concurrent.futures.Future = concurrent.futures.Future()
    future.set_result(result)
    return future


def test_states_follow_the_kind_of_failure_not_its_words():
    denied = denied_result("files", "read", {"path": "a"}, "c1")
    timed_out = error_result("files", "read", "{}", "read on MCP server 'files' gave up", "c2", failure=TIMEOUT)
    tools_own = ToolResult("files", "read", "{}", "upstream did not answer within 5 s; read was not run: busy",
                           is_error=True)
    answered = ToolResult("files", "read", "{}", "hello", replayed=True)
    assert outcome(done(denied))[0] == DENIED
    assert outcome(done(timed_out))[0] == TIMED_OUT
    assert outcome(done(tools_own)) == (ERROR, tools_own.content, False)
    assert outcome(done(answered)) == (DONE, "hello", True)
