"""An evaluation as data: test cases × variants, one result per cell. Qt-free; saved inside the session file.

Declared once with pydantic: the same classes validate a config's tests and assertions (unknown keys are
errors) and are the persisted shape (`Evaluation.to_dict()` / `Evaluation.from_dict()`, JSON with promptfoo's
key names: `assert`, `pass`, `namedScores`, `componentResults`…). A cell is keyed by (case, variant, repeat);
a cell whose status is not final after a crash is run again on resume, the others are kept. Cells and the
evaluation are psygnal EventedModels: a view connects to `cell.events` and never keeps a copy of their state.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from psygnal import EventedModel
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from app.engine import GenerationRequest, SamplingParams

FORMAT = "chorus-evaluation"
VERSION = 1
FINAL_STATUSES = frozenset({"pass", "fail", "error"})


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", validate_assignment=False)


class _Evented(EventedModel):
    """Assigning a field emits `obj.events.<field>(new, old)` (psygnal), so a view renders cells as they stream."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")


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
    max_tokens: int = 256
    stop: list[str] = Field(default_factory=list)
    json_schema: dict[str, Any] | None = None

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
        return GenerationRequest(messages=messages or [{"role": "user", "content": prompt_text}],
                                 sampling=self.sampling_params(), max_tokens=self.max_tokens, stop=tuple(self.stop),
                                 logprobs=logprobs, json_schema=self.json_schema)


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


class CellResult(_Evented):
    """One case × variant (× repeat). `latency_ms` is None when nothing was generated now (a cached or given
    output); status: pending → running → grading → pass | fail | error."""

    case: int
    variant: int
    repeat: int = 0
    status: Literal["pending", "running", "grading", "pass", "fail", "error"] = "pending"
    prompt: str = ""  # the rendered prompt
    output: str = ""
    error: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached_tokens: int = 0
    ttft_s: float | None = None
    decode_tps: float | None = None
    latency_ms: float | None = None
    cached: bool = False
    logprobs: list[float] | None = None  # per generated token, when a perplexity check asked for them
    grading: GradingResult | None = None

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


class Evaluation(_Evented):
    """Cases × variants and their cells; `judge` names the default judge ("local", a GGUF path or a URL)."""

    format: Literal["chorus-evaluation"] = FORMAT
    version: int = VERSION
    description: str = ""
    source: str = ""  # the config file it came from
    judge: str = "local"
    repeat: int = 1
    cases: list[EvalCase] = Field(default_factory=list)
    variants: list[Variant] = Field(default_factory=list)
    cells: list[CellResult] = Field(default_factory=list)
    started_at: str | None = None
    duration_s: float | None = None
    _index: dict = PrivateAttr(default_factory=dict)

    def model_post_init(self, _context) -> None:
        if not self.cells:
            self.cells = [CellResult(case=c, variant=v, repeat=r) for r in range(self.repeat)
                          for c in range(len(self.cases)) for v in range(len(self.variants))]
        self._index = {(cell.case, cell.variant, cell.repeat): cell for cell in self.cells}
        expected = {(c, v, r) for r in range(self.repeat) for c in range(len(self.cases))
                    for v in range(len(self.variants))}
        if set(self._index) != expected or len(self.cells) != len(expected):
            raise ValueError("the cells do not cover cases × variants × repeats exactly once")

    def cell(self, case: int, variant: int, repeat: int = 0) -> CellResult:
        return self._index[(case, variant, repeat)]

    def row(self, case: int, repeat: int = 0) -> list[CellResult]:
        return [self.cell(case, v, repeat) for v in range(len(self.variants))]

    def unfinished(self) -> list[CellResult]:
        """The cells a resume runs (every cell without a final status), in matrix order."""
        return [cell for cell in self.cells if not cell.finished]

    def to_dict(self) -> dict:
        return self.model_dump(mode="json", by_alias=True, exclude_none=False)

    @classmethod
    def from_dict(cls, data: dict) -> Evaluation:
        """Raises pydantic.ValidationError (a ValueError) for anything this version did not write."""
        evaluation = cls.model_validate(data)
        for cell in evaluation.cells:
            if cell.status in ("running", "grading"):  # it was running when the app stopped
                cell.status = "pending"
        return evaluation
