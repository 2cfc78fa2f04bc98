"""The turns of cells that talk with a simulated user (simulated_user.py), and the tool callbacks of every cell
(tool_callbacks.py), driven on the EvaluationRunner's thread through its own submit and worker-thread machinery:
the simulated user's messages go to the evaluation's judge, the provider's to the cell's own backend, batched with
the other cells; callbacks run on the runner's code workers. When a conversation ends, the transcript is the
cell's output and the cell is graded as any other. A failed request, on either side, makes the cell an ERROR
(promptfoo returns the error), and so does a callback past its limits.
"""

from __future__ import annotations

import json
import time

from app.evaluate import cells, tool_callbacks
from app.evaluate.check_types import CheckError
from app.evaluate.routes import judge_target
from app.evaluate.simulated_user import Conversation, agent_text
from app.session.evaluation import CellResult


def callback_output(runner, cell: CellResult, text: str, tool_calls) -> str | None:
    """The output a cell's tool callbacks give (any thread), None when promptfoo keeps the reply."""
    callbacks = runner.evaluation.variants[cell.variant].callbacks
    if not callbacks or not tool_calls:
        return None
    if runner.code is None:
        raise CheckError("this provider's tool callbacks run code, which was not allowed for this evaluation")
    return tool_callbacks.run(callbacks, tool_calls, runner.base_dir, runner.code.js_time_limit)


def called_back(runner, cell: CellResult):
    """Run a cell's tool callbacks (a worker thread): their output becomes the cell's, then it is graded."""
    try:
        text = callback_output(runner, cell, cell.output, cell.result.tool_calls)
    except CheckError as exc:
        return str(exc)
    if text is not None:  # set on the runner's thread, before the grading result arrives there
        runner.runner.post(lambda: setattr(cell.result, "text", text))
    return runner._start_grader(cell, text)


class UserTurns:
    def __init__(self, runner):
        self.runner = runner  # the EvaluationRunner (its _submit, _coding, _grade, _concluded, _reset)
        self._started: dict[int, float] = {}

    def start(self, cell: CellResult, prepared) -> None:
        runner = self.runner
        case = cells.case_for(runner.evaluation, cell, runner.code, runner.registers)
        self._started[id(cell)] = time.perf_counter()
        self._ask_user(cell, Conversation.of(case.provider, case.vars, prepared.prompt))

    def _fail(self, cell: CellResult, why: str) -> None:
        self._started.pop(id(cell), None)
        cell.status, cell.error = "error", why
        self.runner._concluded(cell)

    def _cut(self, cell: CellResult, completion, who: str = "") -> bool:
        """Whether the run was stopped (the cell is pending again) or the request failed (an ERROR)."""
        if self.runner.cancelled:
            self._started.pop(id(cell), None)
            self.runner._reset(cell)
            return True
        if completion.finish_reason in ("error", "cancelled"):
            self._fail(cell, who + (completion.error or completion.finish_reason))
            return True
        return False

    def _ask_user(self, cell: CellResult, talk: Conversation) -> None:
        runner = self.runner
        if talk.over:
            return self._finish(cell, talk)
        try:
            target = judge_target(None, runner.evaluation.judge, runner.base_dir)
            runner._submit(talk.user_request(), target, lambda _r, done: self._user(cell, talk, done))
        except (RuntimeError, ValueError, OSError, ConnectionError) as exc:
            self._fail(cell, f"the simulated user: {exc}")

    def _user(self, cell: CellResult, talk: Conversation, completion) -> None:
        if self._cut(cell, completion, "the simulated user: "):
            return None
        if not talk.user_said(completion.text.strip()):
            return self._finish(cell, talk)
        runner = self.runner
        variant = runner.evaluation.variants[cell.variant]
        messages = talk.agent_messages()
        request = variant.request(json.dumps(messages, ensure_ascii=False), messages)
        try:
            runner._submit(request, variant.target, lambda _r, done: self._agent(cell, talk, done), cell.result)
        except (RuntimeError, ValueError, OSError, ConnectionError) as exc:
            self._fail(cell, str(exc))

    def _agent(self, cell: CellResult, talk: Conversation, completion) -> None:
        if self._cut(cell, completion):
            return None
        text, calls = completion.text, list(completion.tool_calls or ())
        if not self.runner.evaluation.variants[cell.variant].callbacks or not calls:
            talk.agent_said(agent_text(text, calls))
            return self._ask_user(cell, talk)

        def work():
            try:
                return callback_output(self.runner, cell, text, calls)
            except CheckError as exc:
                return exc

        def back(cell: CellResult, out) -> None:
            if isinstance(out, CheckError):
                self._fail(cell, str(out))
            else:
                talk.agent_said(out if out is not None else agent_text(text, calls))
                self._ask_user(cell, talk)
            self.runner._top_up()

        self.runner._coding.start(cell, work, back)

    def _finish(self, cell: CellResult, talk: Conversation) -> None:
        started = self._started.pop(id(cell), None)
        latency = (time.perf_counter() - started) * 1000 if started is not None else None
        cells.given(cell, talk.transcript(), latency)
        self.runner._grade(cell)
