"""An evaluation as data: test cases × variants, one result per cell. Qt-free; a part of the session model.

What a promptfoo config declares (cases, assertions, variants, gradings) is declared once with pydantic: the
same classes validate a config (unknown keys are errors) and give the session file its evaluation's shape
(app/session/evaluation_file.py derives msgspec structs from them, promptfoo's key names included: `assert`,
`pass`, `namedScores`…). The evaluation and its cells are psygnal-evented dataclasses, like panes: assigning a
field emits `obj.events.<field>(new, old)`, and a cell's change — its status, its grading, a token streamed
into its `result` (a PaneResult, as a pane's) — reaches `evaluation.events.all` and, through the session,
`session.events.all`. Views and autosave listen there; nobody relays or announces a change by hand. A cell is
keyed by (case, variant, repeat); its `output` is its result's text, never a copy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from psygnal import SignalGroupDescriptor
from psygnal.containers import EventedList
from pydantic import BaseModel, ConfigDict, Field

from app.engine import GenerationRequest, SamplingParams, limits
from app.session.eval_runs import EvalRun
from app.session.result import PaneResult

Status = Literal["pending", "running", "grading", "pass", "fail", "error"]
FINAL_STATUSES = frozenset({"pass", "fail", "error"})


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", validate_assignment=False)


class Assertion(_Model):
    """One check (promptfoo's assertion). `assertions` is the nested list of an `assert-set`."""

    type: str
    value: Any = None
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    provider: Any = None  # the judge for this assertion (overrides the test's and the evaluation's)
    rubric_prompt: Any = Field(None, alias="rubricPrompt")
    assertions: list[Assertion] | None = Field(None, alias="assert")
    config: dict[str, Any] | None = None
    transform: Any = None  # promptfoo runs JavaScript here: reported as unsupported when set

    @property
    def negated(self) -> bool:
        return self.type.startswith("not-")

    @property
    def base_type(self) -> str:
        return self.type[4:] if self.negated else self.type


class CaseOptions(_Model):
    prefix: str = ""
    suffix: str = ""
    provider: Any = None  # the judge for this test's model-graded assertions
    rubric_prompt: Any = Field(None, alias="rubricPrompt")
    disable_var_expansion: bool = Field(False, alias="disableVarExpansion")
    disable_default_asserts: bool = Field(False, alias="disableDefaultAsserts")
    factuality: dict[str, float] | None = None  # scores per category: subset, superset, agree, disagree, …
    transform: Any = None  # JavaScript: unsupported when set
    run_serially: bool | None = Field(None, alias="runSerially")  # accepted; Chorus's order does not matter


class EvalCase(_Model):
    """One row of the matrix: the vars a prompt is rendered with and the checks its outputs must pass."""

    description: str = ""
    vars: dict[str, Any] = Field(default_factory=dict)
    assertions: list[Assertion] = Field(default_factory=list, alias="assert")
    threshold: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    options: CaseOptions = Field(default_factory=CaseOptions)
    provider_output: Any = Field(None, alias="providerOutput")  # replaces the model call when set


class PromptTemplate(_Model):
    raw: str
    label: str


class BackendTarget(_Model):
    """Where a variant's requests go. `api_key_env` names an environment variable; a key is never stored."""

    kind: Literal["local", "server", "echo", "named"]
    backend: str = ""  # named: a backend of the session's registry by the name panes store ("local" = main model)
    path: str = ""  # local: the GGUF file ("" = the main model)
    url: str = ""  # server: base URL of its OpenAI-compatible API, e.g. http://localhost:11434/v1
    model: str | None = None
    api_key_env: str | None = None
    raw_prompt: bool = False  # send the rendered prompt as raw text (llama:, openai:completion:), no chat template

    @property
    def name(self) -> str:
        if self.kind in ("echo", "named"):
            return self.backend or self.kind
        if self.kind == "local":
            return f"local · {self.path.rsplit('/', 1)[-1] or 'main model'}"
        return f"{self.url} · {self.model or 'default model'}"


class Variant(_Model):
    """One column: a prompt template on a provider (backend, model, settings). Providers keep their label."""

    provider_id: str
    label: str  # the provider's label, or its id
    prompt: PromptTemplate
    target: BackendTarget
    sampling: dict[str, Any] = Field(default_factory=dict)  # SamplingParams fields
    max_tokens: int = limits.MAX_TOKENS.default
    stop: list[str] = Field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)  # function definitions (app/session/tools.py)
    tool_choice: str = "auto"  # auto, none, required, or one tool's name

    @property
    def title(self) -> str:
        """promptfoo's column header: `[provider] prompt label`."""
        return f"[{self.label}] {self.prompt.label}"

    def sampling_params(self) -> SamplingParams:
        return SamplingParams(**self.sampling)

    def request(self, prompt_text: str, messages: list[dict] | None, logprobs: int = 0) -> GenerationRequest:
        """The generation request for one rendered prompt (`messages` for a chat prompt, else one user turn)."""
        if self.target.raw_prompt:
            return GenerationRequest(prompt=prompt_text, sampling=self.sampling_params(), max_tokens=self.max_tokens,
                                     stop=tuple(self.stop), logprobs=logprobs, json_schema=self.json_schema)
        tools = {"tools": tuple(self.tools), "tool_choice": self.tool_choice} if self.tools else {}
        return GenerationRequest(messages=messages or [{"role": "user", "content": prompt_text}],
                                 sampling=self.sampling_params(), max_tokens=self.max_tokens, stop=tuple(self.stop),
                                 logprobs=logprobs, json_schema=self.json_schema, **tools)


def sampling_dict(params: SamplingParams) -> dict[str, Any]:
    return dataclasses.asdict(params)


class JudgeExchange(_Model):
    """One judge call: what it was asked (the last message) and what it replied, shown beside the verdict."""

    asked: str
    reply: str = ""
    error: str | None = None


class GradingResult(_Model):
    """promptfoo's GradingResult: a verdict, its score in [0, 1] (latency without threshold: milliseconds)."""

    passed: bool = Field(alias="pass")
    score: float
    reason: str = ""
    named_scores: dict[str, float] = Field(default_factory=dict, alias="namedScores")
    component_results: list[GradingResult] = Field(default_factory=list, alias="componentResults")
    assertion: Assertion | None = None
    judge: list[JudgeExchange] = Field(default_factory=list)


class JudgeCalibration(_Model):
    """A judge's answers on the calibration set (app/evaluate/calibration.py) for one rubric format: `correct`
    of `total` questions right, `done` once every answer is in. `judge` is the judge as the evaluation names it
    (its provider, else the evaluation's judge; JSON), `format` the rubric format's key, `name` the judge's
    model as shown ("SmolLM2-135M"), `misses` the calibration cases it got wrong."""

    judge: str
    format: str
    name: str = ""
    correct: int = 0
    total: int = 0
    done: bool = False
    misses: list[str] = Field(default_factory=list)


@dataclass(eq=False)
class CellResult:
    """One case × variant (× repeat): its rendered prompt, its generation (`result`, streamed into by the runner),
    and its verdict. status: pending → running → grading → pass | fail | error. `latency_ms` is None when
    nothing was generated now (a given output); `error` says why the cell is an ERROR (its generation's, its
    template's or its grading's failure). `cut_short_tokens`: what its earlier runs generated before a crash or
    a Stop cut them short (a rerun starts a fresh result): totals count them, so they never go backwards on a
    resume. Compared by identity: a cell is a place in the matrix, not a value."""

    events = SignalGroupDescriptor(connect_child_events=True)

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

    def __post_init__(self) -> None:
        self.revision = 0  # its evaluation counts the cell's events here: an encoding of the same count is true

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

    events = SignalGroupDescriptor(connect_child_events=True)

    description: str = ""
    source: str = ""  # the config file it came from
    judge: str = "local"
    repeat: int = 1
    cases: list[EvalCase] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)
    cells: EventedList = field(default_factory=EventedList)
    started_at: str | None = None
    duration_s: float | None = None
    calibrations: list[JudgeCalibration] = field(default_factory=list)  # replaced whole, never mutated
    runs: list[EvalRun] = field(default_factory=list)  # its earlier runs, oldest first (eval_runs.py)

    def __post_init__(self) -> None:
        expected = [(c, v, r) for r in range(self.repeat) for c in range(len(self.cases))
                    for v in range(len(self.variants))]
        if not self.cells:
            self.cells = [CellResult(case=c, variant=v, repeat=r) for c, v, r in expected]
        if not isinstance(self.cells, EventedList):
            self.cells = EventedList(self.cells)
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
