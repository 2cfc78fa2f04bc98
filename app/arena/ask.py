"""Ask an LLM judge about a pair through the SessionRunner (batched with everything else), in both orders:
judges favour a position, so each order is its own request and its own vote."""

from __future__ import annotations

from collections.abc import Callable

from app.arena.judge import JudgeReplyError, JudgeTask, judge_request, parse_judge_reply
from app.engine import RequestHandle
from app.session.runner import SessionRunner
from app.session.state import PaneResult
from app.session.votes import Vote


def ask_judge(runner: SessionRunner, backend: str, task: JudgeTask, judge: str, on_vote: Callable[[Vote], None],
              on_problem: Callable[[str], None]) -> list[RequestHandle]:
    """Submit the judge's two requests (`task`, then `task.swapped()`); each reply becomes a Vote handed to
    `on_vote` on the runner's thread, or a sentence to `on_problem` (a failed request, a reply with no verdict);
a cancelled request gives neither.
    Raises like SessionRunner.submit."""
    handles = []
    for order in (task, task.swapped()):
        def finished(result: PaneResult, _completion, order=order) -> None:
            if result.finish_reason == "cancelled":  # the arena was closed: no vote, nothing to say
                return
            if result.error:
                on_problem(f"The judge failed: {result.error}")
                return
            try:
                on_vote(parse_judge_reply(order, result.text, judge=judge))
            except JudgeReplyError as exc:
                on_problem(f"The judge's vote was not counted: {exc}")

        handles.append(runner.submit(judge_request(order), backend, PaneResult(), on_finish=finished))
    return handles
