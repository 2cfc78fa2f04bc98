"""promptfoo's `webhook` assertion (src/assertions/webhook.ts, 0.123.1): POST the output to the user's URL.

The body is JSON `{"output": <the output, a transform's object as it is>, "context": {"prompt": <the rendered
prompt>, "vars": <the test's vars>}}` with `Content-Type: application/json`, within $WEBHOOK_TIMEOUT ms (default
5000). The answer must be a JSON object with a boolean `pass`; `score` (default 1 / 0) and `reason` (default
"Assertion passed" / "Webhook returned false") are taken as they are; `not-webhook` flips `pass` and makes the
score 1 − score. A failure (no answer, a status that is not 2xx, not JSON, no boolean `pass`) fails the check
with "Webhook error: …" (score 0); a value that is not a URL makes the cell an ERROR. Deliberate difference:
promptfoo retries a failed connection four times with back-off of five seconds and more; Chorus asks once.

A webhook runs no code and starts no process, so `eval` needs no --allow-code for it (as promptfoo); it does send
data off the machine, so a config whose webhooks go to another machine gets one note naming them (`notes`), and
the window asks before the first run (app/ui/evaluate/code_consent.py). Cells with a webhook are graded
on a worker thread (runner.py), so the POST never holds up the window.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from app.evaluate.api_keys import is_loopback
from app.evaluate.check_types import CheckError
from app.session.evaluation import Assertion, EvalCase, GradingResult

TYPE = "webhook"


def _all(assertions):
    for a in assertions:
        yield a
        yield from _all(a.assertions or [])


def used(case: EvalCase) -> bool:
    return any(a.base_type == TYPE for a in _all(case.assertions))


def remote(cases) -> list[str]:
    """The web hooks not on this machine that outputs and vars will be sent to (a URL built from the vars or
    the environment is named as such), each once."""
    urls = sorted({a.value for case in cases for a in _all(case.assertions) if a.base_type == TYPE
                   and isinstance(a.value, str) and "{{" not in a.value and not is_loopback(a.value)})
    templated = any(a.base_type == TYPE and isinstance(a.value, str) and "{{" in a.value
                    for case in cases for a in _all(case.assertions))
    return urls + ["URLs built from the test vars"] * templated


def notes(cases) -> list[str]:
    """One line naming the web hooks on other machines (what `eval` prints before it runs)."""
    found = remote(cases)
    return [f"webhook assertions send each output, its prompt and its vars to {', '.join(found)}"] if found else []


def _timeout_s() -> float:
    try:
        return int(os.environ.get("WEBHOOK_TIMEOUT", "5000")) / 1000
    except ValueError:
        return 5.0


def check(assertion: Assertion, url, output, prompt: str, variables: dict) -> GradingResult:
    """One webhook verdict; `output` is the output as code sees it (text, or a transform's object)."""
    if not url or not isinstance(url, str):
        raise CheckError('Invariant failed: "webhook" assertion type must have a URL value')
    inverse = assertion.negated
    body = json.dumps({"output": output, "context": {"prompt": prompt, "vars": variables}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        try:
            with urllib.request.urlopen(request, timeout=_timeout_s()) as response:  # noqa: S310 - the user's URL
                answer = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"Webhook response status: {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise RuntimeError(f"Request failed: {getattr(exc, 'reason', exc)}") from None
        except ValueError as exc:
            raise RuntimeError(f"the answer is not JSON: {exc}") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("pass"), bool):
            raise RuntimeError('Invariant failed: Webhook response must be a JSON object with a boolean "pass" '
                               "property")
    except RuntimeError as exc:
        return GradingResult(passed=False, score=0.0, reason=f"Webhook error: {exc}", assertion=assertion)
    passed = answer["pass"] != inverse
    score = answer.get("score")
    if score is None:
        score = 1.0 if passed else 0.0
    elif isinstance(score, (int, float)) and not isinstance(score, bool):
        score = 1 - score if inverse else float(score)
    else:
        return GradingResult(passed=False, score=0.0, reason=f"Webhook error: score {score!r} is not a number",
                             assertion=assertion)
    reason = answer.get("reason") or ("Assertion passed" if passed else f"Webhook returned {str(inverse).lower()}")
    return GradingResult(passed=passed, score=score, reason=str(reason), assertion=assertion)
