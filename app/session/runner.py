"""SessionRunner: submits panes to a backend and applies its step events to the panes' results.

The one place run state and timings are computed: live figures from the engine's step times (the clock of
`RequestHandle.t_submit`), final ones from the Completion. The window and the CLI both drive it; it never
touches a widget. Not thread-safe: call it from one thread (the GUI's, or the CLI's main thread).
"""

from __future__ import annotations

from collections.abc import Callable

from app.engine import GenerationRequest, RequestHandle, StepEvent
from app.session.conversation import commit_run, plan_run, record_reply
from app.session.model import PaneResult, PaneSpec, RunState, Session


class AlreadyRunning(ValueError):
    """The pane's previous run has not ended."""


class SessionRunner:
    def __init__(self, session: Session, submit: Callable[[GenerationRequest, str], RequestHandle]):
        """`submit(request, backend)` sends a request to the backend a pane names (`PaneSpec.backend`)."""
        self.session = session
        self._submit = submit
        self.runs: dict[int, tuple[RequestHandle, PaneSpec]] = {}

    def run(self, pane: PaneSpec, use_draft: bool = True) -> RequestHandle:
        """Submit the pane's next turn (`use_draft=False`: regenerate the last reply, keep the draft).
        Raises ValueError/RuntimeError with a message; the pane is unchanged then."""
        if pane.result.busy:
            raise AlreadyRunning("This pane is still running.")
        request, turns = plan_run(pane, use_draft)
        handle = self._submit(request, pane.backend)
        prefix = commit_run(pane, turns, use_draft)
        pane.result = PaneResult(state=RunState.QUEUED, t_submit=handle.t_submit, text=prefix, reply_prefix=prefix,
                                 token_logprobs=[] if request.logprobs else None)
        self.runs[handle.id] = (handle, pane)
        return handle

    def cancel(self, pane: PaneSpec) -> None:
        for handle, running in list(self.runs.values()):
            if running is pane:
                handle.cancel()

    def cancel_all(self) -> None:
        for handle, _pane in list(self.runs.values()):
            handle.cancel()

    def forget(self, pane: PaneSpec) -> None:
        """A pane is going away: cancel its run and never report on it again."""
        for request_id, (handle, running) in list(self.runs.items()):
            if running is pane:
                handle.cancel()
                del self.runs[request_id]

    def apply(self, event: StepEvent) -> list[PaneSpec]:
        """Fold one step into the results; returns the panes whose run ended in it."""
        ended = []
        done = {c.request_id for c in event.finished}
        for request_id, state in event.states.items():
            if request_id in self.runs and request_id not in done:
                result = self.runs[request_id][1].result
                result.state = RunState(state.value)
                if state.value != "queued" and result.queue_wait_s is None and result.t_submit is not None:
                    result.queue_wait_s = event.time - result.t_submit
        for request_id, delta in event.deltas.items():
            if request_id in self.runs:
                result = self.runs[request_id][1].result
                result.text += delta
                if result.t_first is None:
                    result.t_first = event.time
                    result.ttft_s = event.time - result.t_submit if result.t_submit is not None else None
                result.t_last = event.time
        for request_id, count in event.tokens.items():
            if request_id in self.runs:
                result = self.runs[request_id][1].result
                result.generated_tokens = count
                if count > 1 and result.t_first is not None and result.t_last > result.t_first:
                    result.decode_tps = (count - 1) / (result.t_last - result.t_first)
        for request_id, entries in event.logprobs.items():
            if request_id in self.runs and self.runs[request_id][1].result.token_logprobs is not None:
                self.runs[request_id][1].result.token_logprobs.extend(entries)
        for completion in event.finished:
            run = self.runs.pop(completion.request_id, None)
            if run:
                pane = run[1]
                pane.result.finish(completion)
                if completion.finish_reason != "error":
                    pane.result.format_note = pane.output_format.check_output(pane.result.text)
                record_reply(pane)
                ended.append(pane)
        return ended

    @property
    def active(self) -> int:
        return len(self.runs)
