"""The evaluation's part of the session file, declared with msgspec like the rest of the file (schema.py).

Its structs are derived from the model's declarations (`file_structs`): cases, variants and gradings from their
pydantic classes (promptfoo's key names: `assert`, `pass`, `namedScores`…), the evaluation and its cells from
their dataclasses, a cell's generation as a pane's Result (its text and figures; its tokens and their
probabilities stay in memory, for a cell opened as a pane in this run). Unknown keys are refused. Cells written
before a cell held its generation (`output`, `logprobs`… on the cell) still load, and so do version 1 files
(written before judges were calibrated: no `calibrations`). A cell that was running or
being judged when the app stopped is "pending" again, so a resume runs it.

Encoding is cheap for what did not change: a cell's encoding is kept until one of its events says it changed
(`CellResult.revision`), and the cases and variants (replaced, never mutated) until they are replaced.
"""

from __future__ import annotations

import weakref
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from app.engine import final_state
from app.session.eval_runs import EvalRun
from app.session.evaluation import BUSY_STATUSES, CellResult, Evaluation
from app.session.file_structs import dataclass_struct, from_model, given, to_model
from app.session.result import PaneResult, RunState
from app.session.result_file import Result, result_from_file, result_to_file

FORMAT = "chorus-evaluation"
VERSION = 2  # 2: the judges' calibrations (`calibrations`); version 1 files load as they are


class _Header(msgspec.Struct, kw_only=True):
    format: Literal["chorus-evaluation"]
    version: int = VERSION


class _CellBefore(msgspec.Struct, kw_only=True):
    """A cell's generation as Chorus wrote it before a cell held its Result (read, never written)."""

    output: str | UnsetType = UNSET
    finish_reason: str | None | UnsetType = UNSET
    prompt_tokens: int | UnsetType = UNSET
    generated_tokens: int | UnsetType = UNSET
    cached_tokens: int | UnsetType = UNSET
    ttft_s: float | None | UnsetType = UNSET
    decode_tps: float | None | UnsetType = UNSET
    logprobs: list[float] | None | UnsetType = UNSET  # dropped: they served a grading already done


RunFile = dataclass_struct(EvalRun, "EvalRunFile", kw_only=True, forbid_unknown_fields=True)
Cell = dataclass_struct(CellResult, "Cell", {"result": Result}, kw_only=True, forbid_unknown_fields=True,
                        bases=(_CellBefore,))
EvaluationFile = dataclass_struct(Evaluation, "EvaluationFile", {"cells": list[Cell], "runs": list[RunFile]},
                                  kw_only=True, forbid_unknown_fields=True, bases=(_Header,))


# --- file → model --------------------------------------------------------------------------------------------
def cell_from_file(raw: Cell) -> CellResult:
    fields = given(raw)
    before = {name: fields.pop(name) for name in _CellBefore.__struct_fields__ if name in fields}
    before.pop("logprobs", None)
    if "result" in fields:
        fields["result"] = result_from_file(fields["result"])
    elif before:
        text, status = before.pop("output", ""), fields.get("status", "pending")
        ended = RunState(final_state(before.get("finish_reason")).value)
        state = RunState.INTERRUPTED if status in BUSY_STATUSES else ended if text or status != "pending" else (
            RunState.IDLE)
        fields["result"] = PaneResult(state=state, text=text, **before)
    if fields.get("status") in BUSY_STATUSES:
        fields["status"] = "pending"
    if "grading" in fields:
        fields["grading"] = to_model(fields["grading"])
    return CellResult(**fields)


def evaluation_from_file(raw: EvaluationFile) -> Evaluation:
    """Raises ValueError for an evaluation this version cannot hold (a newer one, cells that do not cover
    the matrix)."""
    if raw.version > VERSION:
        raise ValueError(f"it was saved by a newer Chorus (evaluation format {raw.version})")
    fields = given(raw)
    del fields["format"], fields["version"]
    for name in ("cases", "variants", "calibrations", "derived_metrics"):
        if name in fields:
            fields[name] = to_model(fields[name])
    if "cells" in fields:
        fields["cells"] = [cell_from_file(cell) for cell in fields["cells"]]
    if "runs" in fields:
        fields["runs"] = [EvalRun(**given(run)) for run in fields["runs"]]
    return Evaluation(**fields)


# --- model → file --------------------------------------------------------------------------------------------
_cells: weakref.WeakKeyDictionary[CellResult, tuple[int, msgspec.Raw]] = weakref.WeakKeyDictionary()
_parts: weakref.WeakKeyDictionary[Evaluation, tuple[list, list, msgspec.Raw, msgspec.Raw]] = (
    weakref.WeakKeyDictionary())


def cell_to_file(cell: CellResult) -> Cell:
    return Cell(case=cell.case, variant=cell.variant, repeat=cell.repeat, status=cell.status, prompt=cell.prompt,
                error=cell.error, latency_ms=cell.latency_ms, cached=cell.cached, grading=from_model(cell.grading),
                result=result_to_file(cell.result, tokens=False), cut_short_tokens=cell.cut_short_tokens)


def _cell_raw(cell: CellResult) -> msgspec.Raw:
    kept = _cells.get(cell)
    if kept is None or kept[0] != cell.revision:
        kept = _cells[cell] = (cell.revision, msgspec.Raw(msgspec.json.encode(cell_to_file(cell))))
    return kept[1]


_runs: weakref.WeakKeyDictionary[EvalRun, msgspec.Raw] = weakref.WeakKeyDictionary()


def _run_raw(run: EvalRun) -> msgspec.Raw:
    """A kept run as encoded JSON, once (a kept run never changes)."""
    kept = _runs.get(run)
    if kept is None:
        kept = _runs[run] = msgspec.Raw(msgspec.json.encode(RunFile(**vars(run))))
    return kept


def evaluation_to_file(evaluation: Evaluation) -> EvaluationFile:
    """The evaluation's struct, ready to encode; its cases, variants and each unchanged cell are reused as
    encoded the last time (msgspec writes a Raw as it is)."""
    kept = _parts.get(evaluation)
    if kept is None or kept[0] is not evaluation.cases or kept[1] is not evaluation.variants:
        kept = _parts[evaluation] = (evaluation.cases, evaluation.variants,
                                     msgspec.Raw(msgspec.json.encode(from_model(evaluation.cases))),
                                     msgspec.Raw(msgspec.json.encode(from_model(evaluation.variants))))
    return EvaluationFile(format=FORMAT, version=VERSION, description=evaluation.description,
                          source=evaluation.source, judge=evaluation.judge, repeat=evaluation.repeat,
                          cases=kept[2], variants=kept[3], cells=[_cell_raw(cell) for cell in evaluation.cells],
                          started_at=evaluation.started_at, duration_s=evaluation.duration_s,
                          calibrations=from_model(evaluation.calibrations),
                          runs=[_run_raw(run) for run in evaluation.runs],
                          derived_metrics=from_model(evaluation.derived_metrics),
                          nunjucks_filters=evaluation.nunjucks_filters)


def encode(evaluation: Evaluation) -> bytes:
    """The evaluation alone as JSON (what the session file holds under "evaluation")."""
    return msgspec.json.encode(evaluation_to_file(evaluation))


def decode(data: bytes | str) -> Evaluation:
    """An evaluation from its JSON; raises msgspec.ValidationError or ValueError."""
    return evaluation_from_file(msgspec.json.decode(data, type=EvaluationFile))
