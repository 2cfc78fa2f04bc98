"""An evaluation as data: test cases × variants, one result per cell. Qt-free; a part of the session model.

What a promptfoo config declares (cases, assertions, variants, gradings) is declared once with pydantic in
app/session/eval_config.py (and imported from here too). The evaluation and its cells are psygnal-evented
dataclasses, like panes: assigning a field emits `obj.events.<field>(new, old)`, and a cell's change — its status,
its grading, a token streamed into its `result` (a PaneResult, as a pane's) — reaches `evaluation.events.all` and,
through the session, `session.events.all`. Views and autosave listen there; nobody relays or announces a change by
hand. A cell is keyed by (case, variant, repeat); its `output` is its result's text, never a copy.

A cell's signal group and its result's exist only while the cell runs or is graded (RestingEvents,
app/session/resting.py): a pending or finished cell rests, its evaluation's list stays a standing listener, and
the next write to it (a rerun, a re-grade) wakes it and reaches the views as any other change. A 2,000-cell
evaluation keeps a few hundred bytes per finished cell instead of ~150 KB of signals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from psygnal.containers import EventedList

from app.session import resting
from app.session.eval_config import (  # declared there; imported from here by the rest of Chorus
    Assertion,
    BackendTarget,
    CaseOptions,
    DerivedMetric,
    EvalCase,
    GradingResult,
    JudgeCalibration,
    JudgeExchange,
    PromptTemplate,
    Variant,
    sampling_dict,
)
from app.session.eval_runs import EvalRun
from app.session.evented_list import IdentityEventedList
from app.session.field_events import field_events
from app.session.result import PaneResult

__all__ = ["FINAL_STATUSES", "Assertion", "BackendTarget", "CaseOptions", "CellResult", "EvalCase", "Evaluation",
           "GradingResult", "JudgeCalibration", "JudgeExchange", "PromptTemplate", "Status", "Variant",
           "cell_change", "sampling_dict"]

Status = Literal["pending", "running", "grading", "pass", "fail", "error"]
FINAL_STATUSES = frozenset({"pass", "fail", "error"})
# A cell in one of these is working: it keeps its signals (resting.py); read from a file, it was cut short and
# runs again on a resume (evaluation_file.py).
BUSY_STATUSES = frozenset({"running", "grading"})


@dataclass(eq=False)
class CellResult:
    """One case × variant (× repeat): its rendered prompt, its generation (`result`, streamed into by the runner),
    and its verdict. status: pending → running → grading → pass | fail | error. `latency_ms` is None when
    nothing was generated now (a given output); `error` says why the cell is an ERROR (its generation's, its
    template's or its grading's failure). `cut_short_tokens`: what its earlier runs generated before a crash or
    a Stop cut them short (a rerun starts a fresh result): totals count them, so they never go backwards on a
    resume. Compared by identity: a cell is a place in the matrix, not a value."""

    events = resting.RestingEvents(connect_child_events=True)

    case: int
    variant: int
    repeat: int = 0
    status: Status = "pending"
    prompt: str = ""  # the rendered prompt
    error: str | None = None
    latency_ms: float | None = None
    cached: bool = False
    grading: GradingResult | None = None
    result: PaneResult = field(default_factory=PaneResult)
    cut_short_tokens: int = 0
    tool_results: list[dict] = field(default_factory=list)  # MCP answers of its tool rounds (app/evaluate/mcp_loop.py)

    def __post_init__(self) -> None:
        resting.init(self)
        self.revision = 0  # its evaluation counts the cell's events here: an encoding of the same count is true

    def __setattr__(self, name: str, value) -> None:
        """As any evented field (resting.setattr_at_rest); a cell whose status leaves running and grading
        rests once its listeners have heard it."""
        resting.setattr_at_rest(self, name, value)
        if name == "status" and value not in BUSY_STATUSES:
            resting.rest(self)

    @property
    def output(self) -> str:
        return self.result.text

    @property
    def finish_reason(self) -> str | None:
        return self.result.finish_reason

    @property
    def prompt_tokens(self) -> int:
        return self.result.prompt_tokens

    @property
    def generated_tokens(self) -> int:
        return self.result.generated_tokens

    @property
    def cached_tokens(self) -> int:
        return self.result.cached_tokens

    @property
    def ttft_s(self) -> float | None:
        return self.result.ttft_s

    @property
    def decode_tps(self) -> float | None:
        return self.result.decode_tps

    @property
    def logprobs(self) -> list[float] | None:
        """Each generated token's log-probability, when the generation asked for them."""
        entries = self.result.token_logprobs
        return None if entries is None else [entry.logprob for entry in entries]

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def score(self) -> float:
        return self.grading.score if self.grading and self.status != "error" else 0.0

    @property
    def failure_reason(self) -> int:
        """promptfoo's ResultFailureReason: 0 none, 1 an assertion failed, 2 an error."""
        return {"pass": 0, "fail": 1}.get(self.status, 2)


@dataclass(eq=False)
class Evaluation:
    """Cases × variants and their cells (`cells`, an EventedList in matrix order: repeat, case, variant; made
    when not given); `judge` names the default judge ("local", a GGUF path or a URL). The cells cover cases ×
    variants × repeats exactly once (checked on construction). `started_at` is when its first run began,
    `duration_s` the time all its runs took together (a resume adds to it; a run in progress keeps it current).
    Compared by identity, like a cell."""

    events = field_events(connect_child_events=True)

    description: str = ""
    source: str = ""  # the config file it came from
    judge: str = "local"
    repeat: int = 1
    cases: list[EvalCase] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)
    cells: EventedList = field(default_factory=IdentityEventedList)
    started_at: str | None = None
    duration_s: float | None = None
    calibrations: list[JudgeCalibration] = field(default_factory=list)  # replaced whole, never mutated
    runs: list[EvalRun] = field(default_factory=list)  # its earlier runs, oldest first (eval_runs.py)
    derived_metrics: list[DerivedMetric] = field(default_factory=list)  # promptfoo's derivedMetrics
    nunjucks_filters: dict[str, str] = field(default_factory=dict)  # filter name -> its JavaScript file

    def __post_init__(self) -> None:
        expected = [(c, v, r) for r in range(self.repeat) for c in range(len(self.cases))
                    for v in range(len(self.variants))]
        if not self.cells:
            self.cells = [CellResult(case=c, variant=v, repeat=r) for c, v, r in expected]
        if not isinstance(self.cells, IdentityEventedList):  # a cell's events find its index in constant time
            self.cells = IdentityEventedList(self.cells)
        self._index = {(cell.case, cell.variant, cell.repeat): cell for cell in self.cells}
        if set(self._index) != set(expected) or len(self.cells) != len(expected):
            raise ValueError("the cells do not cover cases × variants × repeats exactly once")
        self.events.all.connect(self._count)

    def _count(self, info) -> None:
        """Each event of a cell's (its fields', its result's) moves that cell's `revision` on."""
        index = cell_change(info)
        if index is not None:
            self.cells[index].revision += 1

    def cell(self, case: int, variant: int, repeat: int = 0) -> CellResult:
        return self._index[(case, variant, repeat)]

    def row(self, case: int, repeat: int = 0) -> list[CellResult]:
        return [self.cell(case, v, repeat) for v in range(len(self.variants))]

    @property
    def begun(self) -> bool:
        """It has run before (a resume, not a first run, is what runs the rest)."""
        return self.started_at is not None or any(cell.finished for cell in self.cells)

    def unfinished(self) -> list[CellResult]:
        """The cells a resume runs (every cell without a final status), in matrix order."""
        return [cell for cell in self.cells if not cell.finished]


def cell_change(info) -> int | None:
    """For an event from `evaluation.events.all`: the index in `cells` of the cell it is about (a field of the
    cell, or anything inside its result), or None for an event that is not about one cell."""
    path = info.path
    if len(path) >= 3 and path[0].attr == "cells" and path[1].index is not None:
        return int(path[1].index)
    return None
