"""The comparison as data: which panes exist, what each asks, how, of which backend, and what came back.

Qt-free (an import-linter contract): the window renders and edits these objects, the CLI runs them, and both
save them in one format (`app.session.store`). A pane's conversation is `turns`, oldest first; `draft` is the
next user message being written; `result` is its last run, including one still streaming.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from dataclasses import dataclass, field

from app.engine import Completion, RequestState, SamplingParams, final_state, limits
from app.session.output_format import OutputFormat

# What a pane's last run is doing; the window shows these words. The engine's request states, plus "idle" (never
# run) and "interrupted" (it was running when the app stopped; its text is what had arrived).
RunState = enum.Enum("RunState", {"IDLE": "idle", **{s.name: s.value for s in RequestState},
                                  "INTERRUPTED": "interrupted"}, type=str)


BUSY_STATES = frozenset({RunState.QUEUED, RunState.PREFILLING, RunState.GENERATING})


def new_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class PaneResult:
    """A pane's last run. Live figures come from engine step times; final ones from the Completion."""

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
    token_logprobs: list | None = None  # TokenLogprob per generated token, when the pane showed probabilities
    format_note: str = ""  # how the output checked against the pane's output format
    backend_note: str = ""  # settings the backend did not apply (Completion.note)
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

    def finish(self, completion: Completion) -> None:
        """Take the engine's own final figures (they replace the live ones)."""
        self.state = RunState(final_state(completion.finish_reason).value)
        self.text = self.reply_prefix + completion.text
        self.token_logprobs = completion.token_logprobs
        self.token_ids = list(completion.token_ids)
        self.finish_reason = completion.finish_reason
        self.error = completion.error
        self.error_kind = completion.error_kind
        self.prompt_tokens = completion.prompt_tokens
        self.generated_tokens = completion.generated_tokens
        self.cached_tokens = completion.cached_tokens
        self.backend_note = completion.note
        self.queue_wait_s, self.ttft_s, self.decode_tps = (completion.queue_wait_s, completion.ttft_s,
                                                           completion.decode_tps)


@dataclass
class PaneSpec:
    """One pane: its conversation, settings and backend, plus its last result."""

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
    group: str | None = None  # panes made together (variants, a sweep, branches) share a group id
    rating: int | None = None  # the user's rating of the last reply, 1..5
    note: str = ""  # the user's note on it
    id: str = field(default_factory=new_id)
    result: PaneResult = field(default_factory=PaneResult)

    def __post_init__(self) -> None:
        self.stop = tuple(self.stop)
        limits.MAX_TOKENS.check("max_tokens", self.max_tokens)
        if self.rating is not None and not (isinstance(self.rating, int) and 1 <= self.rating <= 5):
            raise ValueError(f"rating must be 1 to 5 (or none), got {self.rating!r}")
        for i, turn in enumerate(self.turns):
            if turn.get("role") not in ("user", "assistant") or not isinstance(turn.get("content"), str):
                raise ValueError(f"turn {i + 1} must be {{'role': 'user' | 'assistant', 'content': str}}")

    def copy(self, **changes) -> PaneSpec:
        """A new pane with the same question and settings (new id, no result, no rating)."""
        fresh = dataclasses.replace(self, id=new_id(), result=PaneResult(), turns=[dict(t) for t in self.turns],
                                    rating=None, note="")
        return dataclasses.replace(fresh, **changes) if changes else fresh


@dataclass
class Session:
    """Every pane in the window, in order, plus view options such as the grid's column count."""

    panes: list[PaneSpec] = field(default_factory=list)
    view: dict = field(default_factory=dict)

    def save(self, path) -> None:
        from app.session.store import save_session

        save_session(self, path)

    @classmethod
    def load(cls, path) -> Session:
        from app.session.store import load_session

        return load_session(path)

    def to_markdown(self) -> str:
        from app.session.export import to_markdown

        return to_markdown(self)
