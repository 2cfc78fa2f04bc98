"""The comparison as an evented, Qt-free model: which panes exist, what each asks, how, of which backend, and
what came back — the one copy of that state the window, `run` and `eval` share.

Every object here is a psygnal-evented dataclass (napari's model layer works the same way): assigning a field
emits `obj.events.<field>(new, old)`, and a change anywhere in a session — a pane added, a draft typed, a token
streamed into a result — reaches `session.events.all` with its path. Views subscribe and render; autosave
listens; nothing calls "changed()" by hand. A run's figures are the one exception: the runner sets them
together with its text and state (`PaneResult.stream`, `finish`), and only those announce the change, so a
steady pump emits one event per result. Invariant: lists and dicts held here are replaced, never mutated in
place (an in-place change would emit nothing). A pane's conversation is `turns`, oldest first; `draft` is the
next user message being written; `result` is its last run, including one still streaming. A user turn may
carry `"images"`, a tuple of ImageRefs (app/session/images.py), and the draft its `draft_images`.
"""

from __future__ import annotations

import dataclasses
import operator
import uuid
from dataclasses import dataclass, field

from psygnal.containers import EventedList

from app.engine import LoraAdapter, SamplingParams, limits
from app.mcp.replay import RecordedCall
from app.session import resting
from app.session.evaluation import Evaluation
from app.session.evented_list import IdentityEventedList
from app.session.field_events import field_events
from app.session.images import ImageRef
from app.session.output_format import OutputFormat
from app.session.result import BUSY_STATES, PaneResult, RunState
from app.session.version_list import VersionList, as_version_list
from app.session.votes import Vote

__all__ = ["BUSY_STATES", "COLUMNS", "THINKING_LABELS", "PaneResult", "PaneSpec", "RunState", "SessionModel",
           "ViewSettings", "new_id", "pane_change"]  # PaneResult, RunState and BUSY_STATES: from result.py

THINKING_LABELS = {None: "default", True: "on", False: "off"}  # PaneSpec.thinking as the window and sweeps say it
COLUMNS = limits.Limit(1, 4, 2)  # panes per row in the grid
SPEC_MODE_DEFAULT = "off"  # a pane's speculative mode (one of limits.SPEC_MODES) until the user picks one
# A turn is {"role", "content"}; an assistant turn may carry "tool_calls" [{id, name, arguments}], and a "tool"
# turn (a call's result) "tool_call_id" and "name" (app/session/tool_loop.py).
TURN_ROLES = ("user", "assistant", "tool")


def new_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass
class PaneSpec:
    """One pane: its conversation, settings and backend, plus its last result. `number` is given by the
    session when the pane joins it and is never reused there, so "Pane 3" stays Pane 3 across restarts.

    `result` changes when another result is shown, even one with the same values (two runs can be equal):
    the views follow the object, and the one no longer shown is rested."""

    events = field_events(connect_child_events=True, equality_operators={"result": operator.is_})

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
    speculative: str = SPEC_MODE_DEFAULT  # speculative decoding: off, auto or on (n-gram drafts; lossless)
    tools: str = ""  # the tools' JSON as written: OpenAI-style function definitions ("" = none; app/session/tools.py)
    tool_choice: str = "auto"  # auto, none, required, or the name of one tool
    parallel_tool_calls: bool | None = None  # several calls in one reply (None: the backend's default)
    mocks: str = ""  # mock results for the tools' calls, JSON as written ("" = none; app/session/mocks.py)
    expected_calls: str = ""  # the functions the reply should call, comma-separated (the table's F1)
    reference: str = ""  # the reply it should give, e.g. its clip's transcript: the word error rate's (word_errors.py)
    group: str | None = None  # panes made together (variants, a sweep, branches) share a group id
    rating: int | None = None  # the user's rating of the last reply, 1..5
    note: str = ""  # the user's note on it
    number: int | None = None  # given by Session.adopt; None until the pane joins a session
    id: str = field(default_factory=new_id)
    result: PaneResult = field(default_factory=PaneResult)
    versions: VersionList = field(default_factory=VersionList)  # every run's reply, oldest first (versions.py)
    current: int | None = None  # the version the conversation ends with (a running one replaces it when it ends)
    draft_images: tuple[ImageRef, ...] = ()  # images attached to the draft (a user turn's are its "images")
    lora: tuple[LoraAdapter, ...] = ()  # LoRA adapters with their scales, on a local model (none: the base model)
    speculative_kind: str = limits.SPEC_KIND_DEFAULT  # how speculation drafts: "ngram" or "draft" (a draft model)
    draft_model: str = ""  # kind "draft": the draft model's GGUF file ("" = the local model's configured one)
    # tool_choice required or one function: the reply starts with the call (Chorus's call-first grammar; the local
    # engine only, a server is told nothing and the pane's status says so; docs/tools.md "Constrained calls")
    tool_call_first: bool = False
    # MCP servers whose tools the pane offers beside its JSON ones: "server" (all its tools) or "server/tool";
    # they name entries of the session's `mcp_servers` (app/mcp; nothing starts until the user agrees)
    mcp: tuple[str, ...] = ()
    mcp_live: bool = False  # every call goes to its server, none is replayed from the group's recording
    # its videos' frames a second (0: each video's own rate) and frame budget (0: none; app/engine/vision/video.py)
    video_fps: float = limits.VIDEO_FPS.default
    video_max_frames: int = limits.VIDEO_MAX_FRAMES.default

    def __post_init__(self) -> None:
        self.stop = tuple(self.stop)
        self.mcp = tuple(self.mcp)
        self.lora = tuple(self.lora)
        if not all(isinstance(a, LoraAdapter) for a in self.lora):
            raise ValueError("lora must be a list of adapters, each {path, scale}")
        limits.MAX_TOKENS.check("max_tokens", self.max_tokens)
        limits.VIDEO_FPS.check("video fps", self.video_fps)
        limits.VIDEO_MAX_FRAMES.check("video frame budget", self.video_max_frames)
        if self.thinking not in (None, True, False):
            raise ValueError(f"thinking must be on, off or the model's default, got {self.thinking!r}")
        if self.thinking_budget is not None:
            limits.THINKING_BUDGET.check("thinking budget", self.thinking_budget)
        if self.speculative not in limits.SPEC_MODES:
            raise ValueError(f"speculative must be one of {', '.join(limits.SPEC_MODES)}, got {self.speculative!r}")
        if self.speculative_kind not in limits.SPEC_KINDS:
            raise ValueError(f"speculative_kind must be one of {', '.join(limits.SPEC_KINDS)}, "
                             f"got {self.speculative_kind!r}")
        if self.rating is not None and not (isinstance(self.rating, int) and 1 <= self.rating <= 5):
            raise ValueError(f"rating must be 1 to 5 (or none), got {self.rating!r}")
        for i, turn in enumerate(self.turns):
            if turn.get("role") not in TURN_ROLES or not isinstance(turn.get("content"), str):
                raise ValueError(f"turn {i + 1} must be {{'role': 'user' | 'assistant' | 'tool', 'content': str}}")
        self.draft_images = tuple(self.draft_images)
        self.versions = as_version_list(self.versions)
        for i, turn in enumerate(self.turns):
            if not all(isinstance(r, ImageRef) for r in turn.get("images", ())):
                raise ValueError(f"turn {i + 1}: images must be ImageRefs (app/session/images.py)")
        self.events.result.connect(_let_go)

    @property
    def label(self) -> str:
        """What the window calls the pane: its title, else "Pane N"."""
        return self.title or (f"Pane {self.number}" if self.number is not None else "New pane")

    def copy(self, **changes) -> PaneSpec:
        """A new pane with the same question and settings (new id and number, no result, no rating)."""
        fresh = dataclasses.replace(self, id=new_id(), number=None, result=PaneResult(),
                                    turns=[dict(t) for t in self.turns], rating=None, note="", versions=[],
                                    current=None)
        return dataclasses.replace(fresh, **changes) if changes else fresh


@dataclass
class ViewSettings:
    """How the window lays the session out; saved with it."""

    events = field_events()

    columns: int = COLUMNS.default  # panes per row in the grid
    column_group: str | None = None  # columns mode: this group side by side (None: the grid)


@dataclass
class SessionModel:
    """Every pane in order, the view settings, the next pane number (numbers are never reused), the arena's
    votes and an evaluation, all evented: a vote added (`votes` replaced) or a cell of the evaluation changing
    reaches `events.all` as a pane's change does. `app.session.Session` adds the file methods; lower modules
    (store, export) take this."""

    events = field_events(connect_child_events=True)

    panes: EventedList = field(default_factory=IdentityEventedList)
    view: ViewSettings = field(default_factory=ViewSettings)
    next_number: int = 1
    votes: list[Vote] = field(default_factory=list)  # the arena's votes, oldest first (replaced, never mutated)
    evaluation: Evaluation | None = None  # the evaluation this session holds, if any
    # group id -> the group's mock results, JSON as written (app/session/mocks.py; replaced, never mutated)
    group_mocks: dict[str, str] = field(default_factory=dict)
    # MCP servers as `mcpServers` entries, their secrets blanked (those live in the keyring: app/mcp/secrets.py),
    # and the tool answers recorded for replay (app/mcp/replay.py); both replaced, never mutated
    mcp_servers: dict[str, dict] = field(default_factory=dict)
    mcp_records: list[RecordedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.panes, IdentityEventedList):
            self.panes = IdentityEventedList(self.panes)
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


def _let_go(_new: PaneResult, old: PaneResult) -> None:
    """A pane stopped showing `old` (a new run, another version, a clear): unless someone else listens to it,
    its signals go (app/session/resting.py); a finished version keeps only its values."""
    resting.rest(old)


RESULT = "result"


def pane_change(info) -> tuple[int, str] | None:
    """For an event from `session.events.all`: (index of the pane, name of its field that changed — "result"
    for anything inside its result), or None for an event that is not about one pane's fields."""
    path = info.path
    if len(path) >= 3 and path[0].attr == "panes" and path[1].index is not None and path[2].attr is not None:
        return int(path[1].index), path[2].attr
    return None
