"""The session file format, declared once (msgspec): what a `*.chorus.json` file may hold, field by field.

Decoding validates every field's type; a wrong one is refused with the field's path. Optional fields are
UNSET when absent, so the defaults stay the model's own (app/session/state.py). Where the meaning is
unambiguous a value is clamped instead of refused (a rating of 99 is 5, 9 columns are 4). Version 1 files
(Chorus before pane numbers) load too: their panes are numbered in order, their `view.file`/`view.unsaved`
become the `autosave` record.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from app.engine import SamplingParams, limits
from app.engine.logprobs import TokenLogprob
from app.session.evaluation import Evaluation
from app.session.output_format import OutputFormat
from app.session.state import BUSY_STATES, COLUMNS, PaneResult, PaneSpec, RunState, ViewSettings
from app.session.votes import Vote

FORMAT = "chorus-session"
VERSION = 2
SUFFIX = ".chorus.json"
RATING = limits.Limit(1, 5, 3)


class Header(msgspec.Struct):
    """Read first, so a file from a newer Chorus is named as such before its fields are judged."""

    format: object = None
    version: object = None


class Turn(msgspec.Struct):
    role: Literal["user", "assistant"]
    content: str


class Logprob(msgspec.Struct, array_like=False):
    token_id: int
    text: str
    logprob: float
    top: list[tuple[int, str, float]] = []


class Result(msgspec.Struct):
    state: RunState = RunState.IDLE
    text: str | UnsetType = UNSET
    token_ids: list[int] | UnsetType = UNSET
    finish_reason: str | None | UnsetType = UNSET
    error: str | None | UnsetType = UNSET
    error_kind: str | None | UnsetType = UNSET
    prompt_tokens: int | UnsetType = UNSET
    generated_tokens: int | UnsetType = UNSET
    cached_tokens: int | UnsetType = UNSET
    queue_wait_s: float | None | UnsetType = UNSET
    ttft_s: float | None | UnsetType = UNSET
    decode_tps: float | None | UnsetType = UNSET
    reply_prefix: str | UnsetType = UNSET
    token_logprobs: list[Logprob] | None | UnsetType = UNSET
    format_note: str | UnsetType = UNSET
    backend_note: str | UnsetType = UNSET
    reasoning: str | UnsetType = UNSET
    reasoning_tokens: int | UnsetType = UNSET
    answer_ttft_s: float | None | UnsetType = UNSET


class Pane(msgspec.Struct):
    id: str | UnsetType = UNSET
    number: int | None | UnsetType = UNSET
    title: str | UnsetType = UNSET
    system: str | UnsetType = UNSET
    turns: list[Turn] | UnsetType = UNSET
    draft: str | UnsetType = UNSET
    editing: int | None | UnsetType = UNSET
    sampling: SamplingParams | UnsetType = UNSET
    max_tokens: int | UnsetType = UNSET
    stop: list[str] | UnsetType = UNSET
    backend: str | UnsetType = UNSET
    show_probabilities: bool | UnsetType = UNSET
    thinking: bool | None | UnsetType = UNSET
    thinking_budget: int | None | UnsetType = UNSET
    output_format: OutputFormat | UnsetType = UNSET
    reply_prefix: str | UnsetType = UNSET
    group: str | None | UnsetType = UNSET
    rating: int | None | UnsetType = UNSET
    note: str | UnsetType = UNSET
    result: Result | UnsetType = UNSET


class View(msgspec.Struct):
    columns: int | None | UnsetType = UNSET
    column_group: str | None | UnsetType = UNSET
    file: str | None | UnsetType = UNSET  # version 1 kept the autosave record here
    unsaved: bool | UnsetType = UNSET


class Autosave(msgspec.Struct):
    """Only in the autosave: the file the session belongs to, and whether it has changes that file lacks."""

    file: str | None = None
    unsaved: bool = False


class SessionFile(msgspec.Struct):
    format: Literal["chorus-session"]
    version: int
    saved_at: str | None | UnsetType = UNSET
    view: View | UnsetType = UNSET
    panes: list[Pane] | UnsetType = UNSET
    next_number: int | UnsetType = UNSET
    autosave: Autosave | None | UnsetType = UNSET
    votes: list[Vote] | UnsetType = UNSET  # the arena's votes (their own declaration: app/session/votes.py)
    evaluation: dict | None | UnsetType = UNSET  # checked by its own declaration (app/session/evaluation.py)


def _set(struct: msgspec.Struct) -> dict:
    """The fields a file actually gave (absent ones keep the model's defaults)."""
    return {k: v for k, v in msgspec.structs.asdict(struct).items() if v is not UNSET}


# --- file → model --------------------------------------------------------------------------------------------
def result_from_file(raw: Result) -> PaneResult:
    fields = _set(raw)
    if fields.get("state") in BUSY_STATES:  # it was running when the app stopped: keep what had arrived
        fields["state"] = RunState.INTERRUPTED
    if fields.get("token_logprobs") is not None:
        fields["token_logprobs"] = [TokenLogprob(e.token_id, e.text, e.logprob, tuple(tuple(t) for t in e.top))
                                    for e in fields["token_logprobs"]]
    return PaneResult(**fields)


def pane_from_file(raw: Pane) -> PaneSpec:
    """Raises ValueError for values no pane can hold (the model's own checks)."""
    fields = _set(raw)
    if "turns" in fields:
        fields["turns"] = [{"role": t.role, "content": t.content} for t in fields["turns"]]
    if "stop" in fields:
        fields["stop"] = tuple(fields["stop"])
    if fields.get("rating") is not None:
        fields["rating"] = RATING.clamp(fields["rating"])
    if "max_tokens" in fields:
        fields["max_tokens"] = limits.MAX_TOKENS.clamp(fields["max_tokens"])
    if fields.get("editing") is not None and not 0 <= fields["editing"] < len(fields.get("turns", [])):
        fields["editing"] = None  # it pointed past the conversation: nothing is being edited
    if not fields.get("id"):
        fields.pop("id", None)
    if "result" in fields:
        fields["result"] = result_from_file(fields["result"])
    return PaneSpec(**fields)


def view_from_file(raw: View | UnsetType) -> ViewSettings:
    if raw is UNSET:
        return ViewSettings()
    fields = {k: v for k, v in _set(raw).items() if k in ("columns", "column_group") and v is not None}
    if "columns" in fields:
        fields["columns"] = COLUMNS.clamp(fields["columns"])
    return ViewSettings(**fields)


def evaluation_from_file(raw: dict | None | UnsetType) -> Evaluation | None:
    """Raises ValueError (pydantic's) for an evaluation this version did not write."""
    return None if raw is UNSET or raw is None else Evaluation.from_dict(raw)


def autosave_from_file(data: SessionFile) -> Autosave:
    if isinstance(data.autosave, Autosave):
        return data.autosave
    view = data.view if data.view is not UNSET else View()
    return Autosave(file=view.file or None, unsaved=bool(view.unsaved) if view.unsaved is not UNSET else False)


# --- model → file --------------------------------------------------------------------------------------------
def result_to_file(result: PaneResult) -> Result:
    logprobs = None if result.token_logprobs is None else [
        Logprob(e.token_id, e.text, e.logprob, [tuple(t) for t in e.top]) for e in result.token_logprobs]
    return Result(state=result.state, text=result.text, token_ids=list(result.token_ids),
                  finish_reason=result.finish_reason, error=result.error, error_kind=result.error_kind,
                  prompt_tokens=result.prompt_tokens, generated_tokens=result.generated_tokens,
                  cached_tokens=result.cached_tokens, queue_wait_s=result.queue_wait_s, ttft_s=result.ttft_s,
                  decode_tps=result.decode_tps, reply_prefix=result.reply_prefix, token_logprobs=logprobs,
                  format_note=result.format_note, backend_note=result.backend_note,
                  reasoning=result.reasoning or UNSET, reasoning_tokens=result.reasoning_tokens or UNSET,
                  answer_ttft_s=UNSET if result.answer_ttft_s is None else result.answer_ttft_s)


def pane_to_file(pane: PaneSpec) -> Pane:
    return Pane(id=pane.id, number=pane.number, title=pane.title, system=pane.system,
                turns=[Turn(t["role"], t["content"]) for t in pane.turns], draft=pane.draft, editing=pane.editing,
                sampling=pane.sampling, max_tokens=pane.max_tokens, stop=list(pane.stop), backend=pane.backend,
                show_probabilities=pane.show_probabilities, output_format=pane.output_format,
                thinking=pane.thinking, thinking_budget=pane.thinking_budget,
                reply_prefix=pane.reply_prefix, group=pane.group, rating=pane.rating, note=pane.note,
                result=result_to_file(pane.result))


def session_to_file(session, saved_at: str, autosave: Autosave | None = None) -> SessionFile:
    """`session`: a SessionModel (anything with panes, view and next_number)."""
    evaluation = session.evaluation.to_dict() if session.evaluation is not None else None
    return SessionFile(format=FORMAT, version=VERSION, saved_at=saved_at,
                       view=View(columns=session.view.columns, column_group=session.view.column_group),
                       panes=[pane_to_file(p) for p in session.panes], next_number=session.next_number,
                       autosave=autosave if autosave is not None else UNSET, votes=list(session.votes),
                       evaluation=evaluation)
