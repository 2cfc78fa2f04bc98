"""The promptfoo config schema, declared once with pydantic: the top level of promptfooconfig.yaml, its providers,
tests and assertions, and what Chorus makes of them (variants on their backends, gradings, the judges'
calibrations). `validate` turns pydantic's error list into problem lines that name the place
(`tests[3].assert[0]`) and say what is wrong in words. Unknown keys are errors (`extra="forbid"`).

Why pydantic here and msgspec for every file Chorus writes: a config is a file people write, and pydantic lists
every problem of a mapping at once (each unknown key, each missing or mistyped field, with its place) where msgspec
stops at the first, so `eval` names every key and assertion type it does not support in one error before anything
runs. The same classes are the evaluation's cases, variants and gradings in the session model, and the session
file stores them through msgspec structs derived from these declarations (app/session/file_structs.py, promptfoo's
key names included: `assert`, `pass`, `namedScores`…), so a field is still declared once and msgspec alone reads
and writes the file. The evented matrix of cells that holds them is app/session/evaluation.py.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.engine import GenerationRequest, SamplingParams, limits


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", validate_assignment=False)


# --- the top level of promptfooconfig.yaml --------------------------------------------------------------------
class ProviderEntry(_Model):
    id: str
    label: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    prompts: list[str] | None = None  # labels of the prompts this provider runs (exact, or "label:" prefix)
    transform: Any = None  # code run on each output of this provider, before the test's transform
    delay: Any = None  # unsupported when set (Chorus batches; it does not pace calls)
    env: Any = None  # unsupported when set


class DerivedMetric(_Model):
    """A named score computed from a column's named scores (app/evaluate/derived_metrics.py)."""

    name: str
    value: str  # a mathjs expression over the metric names


class EvaluateOptions(_Model):
    max_concurrency: int | None = Field(None, alias="maxConcurrency", ge=1)
    repeat: int | None = Field(None, ge=1)


class ConfigFile(_Model):
    description: str = ""
    prompts: Any = None
    providers: Any = None
    targets: Any = None  # promptfoo's other name for `providers` (read when `providers` is not given)
    tests: Any = None
    default_test: dict[str, Any] | str | None = Field(None, alias="defaultTest")  # a mapping, or file://x.yaml
    output_path: str | list[str] | None = Field(None, alias="outputPath")
    evaluate_options: EvaluateOptions | None = Field(None, alias="evaluateOptions")
    sharing: Any = None  # Chorus never uploads results: any value means the same here
    tags: dict[str, Any] | None = None  # descriptive only
    metadata: dict[str, Any] | None = None  # descriptive only
    yaml_schema: str | None = Field(None, alias="$schema")
    scenarios: Any = None  # groups of vars × tests (app/evaluate/scenarios.py)
    assertion_templates: dict[str, Any] | None = Field(None, alias="assertionTemplates")  # what `$ref`s point at
    derived_metrics: list[DerivedMetric] | None = Field(None, alias="derivedMetrics")
    nunjucks_filters: Any = Field(None, alias="nunjucksFilters")  # {name: JavaScript file} (nunjucks_filters.py)


# --- tests and assertions ---------------------------------------------------------------------------------------
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
    transform: str | None = None  # code run on the output before this check (app/evaluate/code_checks.py)
    # code that extracts a context-* check's context from the output (app/evaluate/rag.py)
    context_transform: str | None = Field(None, alias="contextTransform")
    description: str | None = None  # shown beside this check's verdict

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
    transform: Any = None  # code run on the output before the assertions (app/evaluate/code_checks.py)
    transform_vars: str | None = Field(None, alias="transformVars")  # code run on the vars before rendering
    run_serially: bool | None = Field(None, alias="runSerially")  # accepted; Chorus's order does not matter
    store_output_as: str | None = Field(None, alias="storeOutputAs")  # a var later tests see this output as
    providers: Any = None  # promptfoo reads no such option (its schema lets it pass): nor does Chorus (a note says so)


class EvalCase(_Model):
    """One row of the matrix: the vars a prompt is rendered with and the checks its outputs must pass."""

    description: str = ""
    vars: dict[str, Any] = Field(default_factory=dict)
    assertions: list[Assertion] = Field(default_factory=list, alias="assert")
    threshold: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    options: CaseOptions = Field(default_factory=CaseOptions)
    provider_output: Any = Field(None, alias="providerOutput")  # replaces the model call when set
    provider: dict[str, Any] | None = None  # the test's provider: promptfoo:simulated-user (simulated_user.py)
    # code that scores the test from its named scores (file://x.js[:fn] or file://x.py[:fn]; code_checks.py)
    assert_scoring_function: str | None = Field(None, alias="assertScoringFunction")


class PromptTemplate(_Model):
    raw: str
    label: str
    config: dict[str, Any] = Field(default_factory=dict)  # the prompt's own settings, over its providers' config
    exec: str | None = None  # an `exec:` prompt: the command whose output is the template (exec_prompts.py)


class BackendTarget(_Model):
    """Where a variant's requests go. `api_key_env` names an environment variable; a key is never stored."""

    kind: Literal["local", "server", "echo", "named", "code"]
    backend: str = ""  # named: a backend of the session's registry by the name panes store ("local" = main model)
    path: str = ""  # local: the GGUF file ("" = the main model); code: the provider's file[:function], or exec:<cmd>
    url: str = ""  # server: base URL of its OpenAI-compatible API, e.g. http://localhost:11434/v1
    model: str | None = None
    api_key_env: str | None = None
    raw_prompt: bool = False  # send the rendered prompt as raw text (llama:, openai:completion:), no chat template

    @property
    def needs_backend(self) -> bool:
        """Whether requests go to a model (not echo, nor a custom provider's code)."""
        return self.kind not in ("echo", "code")

    @property
    def name(self) -> str:
        if self.kind == "code":
            return f"code · {self.path.rsplit('/', 1)[-1]}"
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
    # promptfoo's config.mcp: {"servers": mcpServers entries (secrets blanked: app/mcp/secrets.py), "timeout_s"}
    mcp: dict[str, Any] | None = None
    config: dict[str, Any] = Field(default_factory=dict)  # a custom provider's config, as written (code only)
    prices: dict[str, float] | None = None  # USD per token {input, output}: config cost / inputCost / outputCost
    functions: list[dict[str, Any]] | None = None  # promptfoo's legacy `functions` setting (also in `tools`)
    transform: str | None = None  # the provider's `transform`: code run on each output (code_checks.py)
    callbacks: dict[str, str] | None = None  # functionToolCallbacks: tool name -> JavaScript (tool_callbacks.py)

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


# --- validation: every problem at once ----------------------------------------------------------------------------
class _Problems(Protocol):  # app.evaluate.errors.Problems
    def add(self, where: str, what: str) -> None: ...


def _place(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def surrogate_keys(data, where: str):
    """(place, key) for each mapping key holding a lone surrogate (JSON's "\\udcff": half a character). Such a
    value is kept and written escaped, but a key cannot be: results and the session file could not be saved.
    Walks without recursion, each container once (YAML anchors can make a structure contain itself)."""
    seen: set[int] = set()
    stack = [(where, data)]
    while stack:
        place, value = stack.pop()
        if not isinstance(value, (dict, list)) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, list):
            stack += [(f"{place}[{i}]", item) for i, item in enumerate(value)]
            continue
        for key, item in value.items():
            if isinstance(key, str) and any("\ud800" <= ch <= "\udfff" for ch in key):
                yield place or "the config", key
            else:
                stack.append((f"{place}.{key}" if place else str(key), item))


def validate(model: type[BaseModel], data, where: str, problems: _Problems):
    """The validated model, or None after adding one problem line per pydantic error (and per key holding a
    lone surrogate)."""
    bad_keys = list(surrogate_keys(data, where))
    for place, key in bad_keys:
        problems.add(place, f"the key {ascii(key)} holds a lone surrogate (half a character): write it as text")
    if bad_keys:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = _place(error["loc"])
            place = f"{where}.{loc}" if where and loc else (where or loc)
            if error["type"] == "extra_forbidden":
                key = error["loc"][-1]
                parent = place[: -len(str(key))].rstrip(".") or "the config"
                problems.add(parent, f"unknown key {key!r} (Chorus does not support it)")
            elif error["type"] == "missing":
                problems.add(place, "missing (required)")
            else:
                problems.add(place, f"{error['msg']} (got {error.get('input')!r})")
        return None
