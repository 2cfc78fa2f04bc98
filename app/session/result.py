"""A run's result as an evented, Qt-free dataclass: a pane's last run, or an evaluation cell's generation.

Assigning a field emits `result.events.<field>(new, old)` (psygnal). Only the runner writes a live result, and
it sets a pump's changes together (`stream`, `finish`): they announce one change, so a steady pump emits one
event per result. `t_submit`, `t_first` and `t_last` are the engine clock's marks of a live run (not saved).

A result's signal group (one signal per field, ~37 KB) exists only while someone can hear it (RestingEvents,
app/session/resting.py): a pane's result while the pane shows it, a cell's while the cell runs or is graded,
or while a view connects to it. A finished version the pane no longer shows, or a finished cell's result,
keeps only its values: it rests (`resting.rest`), and a later write to it wakes it, so whoever relays it (its
cell, its evaluation) hears the change as before; a result nobody can hear emits nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from app.engine import Completion, RequestState, final_state
from app.engine.chat.template.reasoning import split_prefix
from app.session import resting

# What a pane's last run is doing; the window shows these words. The engine's request states, plus "idle" (never
# run) and "interrupted" (it was running when the app stopped; its text is what had arrived).
RunState = enum.Enum("RunState", {"IDLE": "idle", **{s.name: s.value for s in RequestState},
                                  "INTERRUPTED": "interrupted"}, type=str)


_ANNOUNCED = ("state", "reasoning", "text")  # the PaneResult fields whose events announce a change set together
BUSY_STATES = frozenset({RunState.QUEUED, RunState.PREFILLING, RunState.GENERATING})


@dataclass
class PaneResult:
    """A run's result (a pane's last run, or an evaluation cell's). Live figures come from step times, final
    ones from the Completion; only the runner writes it."""

    events = resting.RestingEvents()
    __setattr__ = resting.setattr_at_rest

    state: RunState = RunState.IDLE
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    error: str | None = None
    error_kind: str | None = None  # e.g. "context": the conversation no longer fits the slot
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached_tokens: int = 0
    queue_wait_s: float | None = None
    ttft_s: float | None = None
    decode_tps: float | None = None
    reply_prefix: str = ""  # the text this reply was branched from (the engine generated what follows it)
    token_logprobs: list | None = None  # TokenLogprob per generated token, when the run asked for them
    format_note: str = ""  # how the output checked against the pane's output format
    backend_note: str = ""  # settings the backend did not apply (Completion.note)
    reasoning: str = ""  # a reasoning model's thinking, apart from the answer in `text` (streamed live too)
    reasoning_tokens: int = 0
    answer_ttft_s: float | None = None  # submit -> first text of the answer, after any thinking
    drafted_tokens: int = 0  # speculative decoding: tokens drafted and verified (Completion.drafted_tokens)
    accepted_tokens: int = 0  # of those, the ones that became output
    tool_calls: list[dict] = field(default_factory=list)  # the reply's calls: {id, name, arguments (JSON text)}
    # Engine clock (time.perf_counter) marks of a live run; not saved.
    t_submit: float | None = field(default=None, repr=False, compare=False)
    t_first: float | None = field(default=None, repr=False, compare=False)
    t_last: float | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        resting.init(self)

    @property
    def busy(self) -> bool:
        return self.state in BUSY_STATES

    def live_wait(self, now: float) -> float | None:
        """Queue wait so far (`now` on the engine clock, time.perf_counter), or the final figure."""
        if self.queue_wait_s is not None or self.t_submit is None or self.state != RunState.QUEUED:
            return self.queue_wait_s
        return now - self.t_submit

    def summary(self, now: float | None = None) -> str:
        """One line for a status bar: state · wait · TTFT · tok/s · tokens · cached · finish — error.
        `now` (time.perf_counter) makes a queued run's wait live."""
        parts = [self.state.value]
        wait = self.live_wait(now) if now is not None else self.queue_wait_s
        for value, text in ((wait, "wait {:.2f} s"), (self.ttft_s, "TTFT {:.2f} s"),
                            (self.decode_tps or None, "{:.1f} tok/s"), (self.generated_tokens or None, "{} tok"),
                            (self.cached_tokens or None, f"{{}}/{self.prompt_tokens} prompt tok cached")):
            if value is not None:
                parts.append(text.format(value))
        if self.drafted_tokens:
            parts.append(f"{self.accepted_tokens}/{self.drafted_tokens} drafted accepted")
        if self.finish_reason and not self.busy:
            parts.append(f"finish: {self.finish_reason}")
            parts += [note for note in (self.format_note, self.backend_note) if note]
        line = " · ".join(parts)
        return line + (f" — {self.error}" if self.error and not self.busy else "")

    def stream(self, text: str | None = None, reasoning: str | None = None, state: RunState | None = None,
               **figures) -> None:
        """A pump's changes to a live run (the runner's), set together (`_set_together`): a steady pump is one
        event, `text`'s. Each event travels up through the pane and the session to every view, and with 16
        streaming panes those relays, one per field, were the largest part of the window's pump."""
        values = dict(figures)
        for name, value in zip(_ANNOUNCED, (state, reasoning, text), strict=True):
            if value is not None:
                values[name] = value
        self._set_together(values)

    def finish(self, completion: Completion) -> None:
        """Take the backend's own final figures (they replace the live ones), together (`_set_together`): when
        `state` says "done", everything is in."""
        prefix_answer, prefix_thought = split_prefix(self.reply_prefix)
        self._set_together({
            "reasoning_tokens": completion.reasoning_tokens, "answer_ttft_s": completion.answer_ttft_s,
            "token_logprobs": completion.token_logprobs, "token_ids": list(completion.token_ids),
            "finish_reason": completion.finish_reason, "error": completion.error,
            "error_kind": completion.error_kind, "prompt_tokens": completion.prompt_tokens,
            "generated_tokens": completion.generated_tokens, "cached_tokens": completion.cached_tokens,
            "backend_note": completion.note, "queue_wait_s": completion.queue_wait_s, "ttft_s": completion.ttft_s,
            "decode_tps": completion.decode_tps, "drafted_tokens": completion.drafted_tokens,
            "accepted_tokens": completion.accepted_tokens, "tool_calls": [dict(c) for c in completion.tool_calls],
            "state": RunState(final_state(completion.finish_reason).value),
            "reasoning": "\n".join(t for t in (prefix_thought.strip(), completion.reasoning_text) if t),
            "text": prefix_answer + completion.text})

    def _set_together(self, values: dict) -> None:
        """Assign every field first, then announce: `state`, `reasoning` and `text` emit their own events if they
        changed (if none did, the last field that moved emits), so whoever listens reads all of the new values
        and hears one to three events instead of one per field."""
        old = {name: getattr(self, name) for name in values}
        moved = [name for name, value in values.items() if value != old[name]]
        for name in moved:
            object.__setattr__(self, name, values[name])  # bypasses the evented __setattr__: no event yet
        announced = [name for name in moved if name in _ANNOUNCED] or moved[-1:]
        group = resting.events_of(self) if announced else None
        for name in announced if group is not None else ():  # no group: nobody can hear it (resting.py)
            group[name].emit(values[name], old[name])
