"""The comparison as an evented, Qt-free model: which panes exist, what each asks, how, of which backend, and
what came back — the one copy of that state the window, `run` and `eval` share.

Every object here is a psygnal-evented dataclass (napari's model layer works the same way): assigning a field
emits `obj.events.<field>(new, old)`, and a change anywhere in a session — a pane added, a draft typed, a token
streamed into a result — reaches `session.events.all` with its path. Views subscribe and render; autosave
listens; nothing calls "changed()" by hand. A run's figures are the one exception: the runner sets them
together with its text and state (`PaneResult.stream`, `finish`), and only those announce the change, so a
steady pump emits one event per result. Invariant: lists and dicts held here are replaced, never mutated in
place (an in-place change would emit nothing). A pane's conversation is `turns`, oldest first; `draft` is the
next user message being written; `result` is its last run, including one still streaming.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from dataclasses import dataclass, field

from psygnal import SignalGroupDescriptor
from psygnal.containers import EventedList

from app.engine import Completion, RequestState, SamplingParams, final_state, limits
from app.engine.reasoning import split_prefix
from app.session.evaluation import Evaluation
from app.session.output_format import OutputFormat
from app.session.votes import Vote

# What a pane's last run is doing; the window shows these words. The engine's request states, plus "idle" (never
# run) and "interrupted" (it was running when the app stopped; its text is what had arrived).
RunState = enum.Enum("RunState", {"IDLE": "idle", **{s.name: s.value for s in RequestState},
                                  "INTERRUPTED": "interrupted"}, type=str)


THINKING_LABELS = {None: "default", True: "on", False: "off"}  # PaneSpec.thinking as the window and sweeps say it
_ANNOUNCED = ("state", "reasoning", "text")  # the PaneResult fields whose events announce a change set together
BUSY_STATES = frozenset({RunState.QUEUED, RunState.PREFILLING, RunState.GENERATING})
COLUMNS = limits.Limit(1, 4, 2)  # panes per row in the grid


def new_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class PaneResult:
    """A run's result (a pane's last run, or an evaluation cell's). Live figures come from step times, final
    ones from the Completion; only the runner writes it."""

    events = SignalGroupDescriptor()

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
    # Engine clock (time.perf_counter) marks of a live run; not saved.
    t_submit: float | None = field(default=None, repr=False, compare=False)
    t_first: float | None = field(default=None, repr=False, compare=False)
    t_last: float | None = field(default=None, repr=False, compare=False)

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
            "decode_tps": completion.decode_tps,
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
        for name in announced:
            getattr(self.events, name).emit(values[name], old[name])


@dataclass
class PaneSpec:
    """One pane: its conversation, settings and backend, plus its last result. `number` is given by the
    session when the pane joins it and is never reused there, so "Pane 3" stays Pane 3 across restarts."""

    events = SignalGroupDescriptor(connect_child_events=True)

    title: str = ""
    system: str = ""
    turns: list[dict] = field(default_factory=list)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    max_tokens: int = limits.MAX_TOKENS.default
    stop: tuple[str, ...] = ()
    backend: str = "local"
    draft: str = ""
    editing: int | None = None  # index of the user turn being rewritten in `draft`, if any
    show_probabilities: bool = False  # ask for token log-probabilities and tint the reply by them
    output_format: OutputFormat = field(default_factory=OutputFormat)
    reply_prefix: str = ""  # a branch's chosen start of the next reply; the next run continues it
    thinking: bool | None = None  # a reasoning model thinks (True) or answers at once (False); None = its default
    thinking_budget: int | None = None  # most thinking tokens before the block is closed (None = no cap)
    group: str | None = None  # panes made together (variants, a sweep, branches) share a group id
    rating: int | None = None  # the user's rating of the last reply, 1..5
    note: str = ""  # the user's note on it
    number: int | None = None  # given by Session.adopt; None until the pane joins a session
    id: str = field(default_factory=new_id)
    result: PaneResult = field(default_factory=PaneResult)

    def __post_init__(self) -> None:
        self.stop = tuple(self.stop)
        limits.MAX_TOKENS.check("max_tokens", self.max_tokens)
        if self.thinking not in (None, True, False):
            raise ValueError(f"thinking must be on, off or the model's default, got {self.thinking!r}")
        if self.thinking_budget is not None:
            limits.THINKING_BUDGET.check("thinking budget", self.thinking_budget)
        if self.rating is not None and not (isinstance(self.rating, int) and 1 <= self.rating <= 5):
            raise ValueError(f"rating must be 1 to 5 (or none), got {self.rating!r}")
        for i, turn in enumerate(self.turns):
            if turn.get("role") not in ("user", "assistant") or not isinstance(turn.get("content"), str):
                raise ValueError(f"turn {i + 1} must be {{'role': 'user' | 'assistant', 'content': str}}")

    @property
    def label(self) -> str:
        """What the window calls the pane: its title, else "Pane N"."""
        return self.title or (f"Pane {self.number}" if self.number is not None else "New pane")

    def copy(self, **changes) -> PaneSpec:
        """A new pane with the same question and settings (new id and number, no result, no rating)."""
        fresh = dataclasses.replace(self, id=new_id(), number=None, result=PaneResult(),
                                    turns=[dict(t) for t in self.turns], rating=None, note="")
        return dataclasses.replace(fresh, **changes) if changes else fresh


@dataclass
class ViewSettings:
    """How the window lays the session out; saved with it."""

    events = SignalGroupDescriptor()

    columns: int = COLUMNS.default  # panes per row in the grid
    column_group: str | None = None  # columns mode: this group side by side (None: the grid)


@dataclass
class SessionModel:
    """Every pane in order, the view settings, the next pane number (numbers are never reused), the arena's
    votes and an evaluation. `app.session.Session` adds the file methods; lower modules (store, export) take this."""

    events = SignalGroupDescriptor(connect_child_events=True)

    panes: EventedList = field(default_factory=EventedList)
    view: ViewSettings = field(default_factory=ViewSettings)
    next_number: int = 1
    votes: list[Vote] = field(default_factory=list)  # the arena's votes, oldest first (replaced, never mutated)
    evaluation: Evaluation | None = None  # the evaluation this session holds, if any

    def __post_init__(self) -> None:
        if not isinstance(self.panes, EventedList):
            self.panes = EventedList(self.panes)
        if isinstance(self.view, dict):  # Session(view={"columns": 3}) as a convenience
            self.view = ViewSettings(**self.view)
        for pane in self.panes:
            self._number(pane)

    def _number(self, pane: PaneSpec) -> None:
        if pane.number is None:
            pane.number = self.next_number
        self.next_number = max(self.next_number, pane.number + 1)

    def adopt(self, pane: PaneSpec, index: int | None = None) -> PaneSpec:
        """Insert a pane (at the end by default), numbering it if it has no number yet."""
        self._number(pane)
        self.panes.insert(len(self.panes) if index is None else index, pane)
        return pane

    def pane_by_id(self, pane_id: str) -> PaneSpec | None:
        return next((p for p in self.panes if p.id == pane_id), None)

    def group(self, group: str | None) -> list[PaneSpec]:
        """The panes of a group, in order (none for no group)."""
        return [p for p in self.panes if group is not None and p.group == group]


RESULT = "result"


def pane_change(info) -> tuple[int, str] | None:
    """For an event from `session.events.all`: (index of the pane, name of its field that changed — "result"
    for anything inside its result), or None for an event that is not about one pane's fields."""
    path = info.path
    if len(path) >= 3 and path[0].attr == "panes" and path[1].index is not None and path[2].attr is not None:
        return int(path[1].index), path[2].attr
    return None
