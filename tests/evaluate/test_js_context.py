"""JavaScript checks share one V8 context (making one costs milliseconds of CPU that a busy machine takes from
decoding), as promptfoo's share one Node realm; a check past its time or memory limit ends that call and its
context, and a fresh context serves the next."""

import pytest

from app.evaluate import js_code
from app.evaluate.js_code import CodeLimit

COUNT = "globalThis.__calls = (globalThis.__calls || 0) + 1;\nreturn globalThis.__calls;\n"


def run(body: str, time_limit: float = js_code.TIME_LIMIT_S):
    return js_code.call(body, None, None, ("output", "context"), ["text", {}], time_limit=time_limit)


# the old context is closed only once V8 has reported the cancelled call (else mini-racer prints "Event loop is
# closed" from that report, on stderr in the window)
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_checks_share_one_context_until_one_runs_past_its_limit():
    first, second = run(COUNT).value.value, run(COUNT).value.value
    assert second == first + 1  # the same context served both
    try:
        run("while (true) {}\nreturn true\n", time_limit=0.5)
    except CodeLimit as exc:
        assert "time limit" in str(exc)
    else:
        raise AssertionError("a check that loops must end with CodeLimit")
    assert run(COUNT).value.value == 1  # a fresh context after the limit
    assert run("return output.length").value.value == 4
