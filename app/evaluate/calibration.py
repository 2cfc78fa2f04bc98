"""Judge calibration: a judge's model-graded verdicts count only once it has shown it can tell an obvious pass
from an obvious fail in the same rubric format.

The calibration set is a promptfoo config in the repo (`resources/calibration/judges.yaml`, or the file named by
$CHORUS_CALIBRATION_FILE), read with the evaluation's own loader: per kind (llm-rubric, factuality, g-eval,
select-best) obvious passes and fails with the verdict a capable judge gives (`metadata.expect`; select-best's
`metadata.best`, asked in both orders). A *format* is a kind with its rubricPrompt (the evaluation's own, when it
sets one, replaces promptfoo's default in the calibration questions too). `CalibrationRun` asks one judge one
format's questions as ordinary judge calls (app/evaluate/calibration_run.py; the EvaluationRunner submits them
through the Backend protocol) and gives a `JudgeCalibration`. A judge is reliable for a format when it answers at
least `RELIABLE_AT` of them right; below that, or while it is still being calibrated, the verdicts it gives in
that format do not count (`Reliability`). Qt-free.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from app.evaluate.config import Suite, load_config
from app.session.evaluation import Assertion, CellResult, EvalCase, Evaluation, JudgeCalibration

RELIABLE_AT = 0.8
"""The share of calibration questions a judge must answer right for its verdicts to count (docs/evaluate.md)."""
KINDS = {"llm-rubric": "llm-rubric", "factuality": "factuality", "model-graded-factuality": "factuality",
         "g-eval": "g-eval", "select-best": "select-best", "moderation": "moderation"}


def calibration_file() -> Path:
    """$CHORUS_CALIBRATION_FILE, else the set shipped in resources/ (the source tree's or an installer's)."""
    given = os.environ.get("CHORUS_CALIBRATION_FILE")
    if given:
        return Path(given)
    bundle = getattr(sys, "_MEIPASS", None)
    root = Path(bundle) if bundle else Path(__file__).resolve().parents[2]
    return root / "resources" / "calibration" / "judges.yaml"


@lru_cache(maxsize=4)
def _load(path: str, _mtime: float) -> Suite:
    return load_config(path)


def calibration_suite(path: Path | None = None) -> Suite:
    """The calibration set, read once per file version; raises ConfigError as any config does."""
    path = Path(path or calibration_file())
    return _load(str(path), path.stat().st_mtime)


def judge_key(evaluation: Evaluation, provider) -> str:
    """Who judges, as the evaluation names it: an assertion's or a test's provider, else its judge."""
    return json.dumps(provider, sort_keys=True) if provider else f"judge:{evaluation.judge}"


def format_key(kind: str, rubric_prompt) -> str:
    """The kind, with a short digest of a custom rubricPrompt (promptfoo's default has none)."""
    if rubric_prompt is None:
        return kind
    digest = hashlib.sha1(json.dumps(rubric_prompt, sort_keys=True).encode()).hexdigest()[:8]
    return f"{kind} (rubricPrompt {digest})"


@dataclass(frozen=True)
class Need:
    """One judge in one format, as an evaluation's assertions use it."""

    provider: object  # the assertion's or test's provider (None: the evaluation's judge)
    kind: str
    rubric_prompt: object
    judge: str  # judge_key
    format: str  # format_key

    @property
    def key(self) -> tuple[str, str]:
        return self.judge, self.format


def need_of(evaluation: Evaluation, case: EvalCase, assertion: Assertion) -> Need | None:
    kind = KINDS.get(assertion.base_type)
    if kind is None:
        return None
    provider = assertion.provider or case.options.provider
    rubric = assertion.rubric_prompt or case.options.rubric_prompt
    return Need(provider, kind, rubric, judge_key(evaluation, provider), format_key(kind, rubric))


def _assertions(case: EvalCase):
    for assertion in case.assertions:
        yield assertion
        yield from assertion.assertions or []


def needs(evaluation: Evaluation, cases: set[int] | None = None) -> list[Need]:
    """Every judge × format the cases (default: all) use, each once, in the order met."""
    found: dict[tuple[str, str], Need] = {}
    for index, case in enumerate(evaluation.cases):
        if cases is None or index in cases:
            for assertion in _assertions(case):
                need = need_of(evaluation, case, assertion)
                if need is not None:
                    found.setdefault(need.key, need)
    return list(found.values())


def reliable(calibration: JudgeCalibration) -> bool:
    return calibration.done and calibration.total > 0 and calibration.correct >= RELIABLE_AT * calibration.total


def describe(calibration: JudgeCalibration) -> str:
    """"judge: SmolLM2-135M, 4/10 on llm-rubric calibration — verdicts unreliable"."""
    name = calibration.name or calibration.judge
    if not calibration.done:
        return f"judge: {name}, being calibrated on {calibration.format}"
    verdict = "" if reliable(calibration) else " — verdicts unreliable"
    return f"judge: {name}, {calibration.correct}/{calibration.total} on {calibration.format} calibration{verdict}"


class Reliability:
    """Which cells' verdicts rest on a judge that is not reliable (calibrated below RELIABLE_AT, or still being
    calibrated). A cell's verdict does not rest on it when a check it trusts failed and the test has no
    threshold (that fail stands whatever the judge said). Judges never calibrated (an evaluation saved before
    calibration existed) are taken as they are."""

    def __init__(self, evaluation: Evaluation):
        self.evaluation = evaluation
        self.found = {(c.judge, c.format): c for c in evaluation.calibrations}

    def of(self, case: int, assertion: Assertion | None) -> JudgeCalibration | None:
        if assertion is None:
            return None
        need = need_of(self.evaluation, self.evaluation.cases[case], assertion)
        return self.found.get(need.key) if need is not None else None

    def doubtful(self, cell: CellResult) -> list[JudgeCalibration]:
        """The calibrations that make the cell's verdict unreliable ([] when it counts)."""
        if cell.status not in ("pass", "fail") or cell.grading is None or not self.found:
            return []
        bad: dict[tuple[str, str], JudgeCalibration] = {}
        trusted_failed = False
        for component in cell.grading.component_results:
            if component.assertion is None or component.assertion.base_type == "assert-set":
                continue
            calibration = self.of(cell.case, component.assertion)
            if calibration is not None and not reliable(calibration):
                bad[(calibration.judge, calibration.format)] = calibration
            elif not component.passed:
                trusted_failed = True
        if trusted_failed and self.evaluation.cases[cell.case].threshold is None:
            return []
        return list(bad.values())

    def unreliable(self, cell: CellResult) -> bool:
        return bool(self.doubtful(cell))

    def for_cells(self, cells: list[CellResult]) -> list[JudgeCalibration]:
        """The calibrations of the judges these cells' model-graded assertions use, each once."""
        found: dict[tuple[str, str], JudgeCalibration] = {}
        cases = {cell.case for cell in cells}
        for need in needs(self.evaluation, cases):
            if need.key in self.found:
                found.setdefault(need.key, self.found[need.key])
        return list(found.values())


def with_calibration(evaluation: Evaluation, calibration: JudgeCalibration) -> None:
    """Put the calibration into the evaluation, replacing its judge's earlier one in that format."""
    kept = [c for c in evaluation.calibrations if (c.judge, c.format) != (calibration.judge, calibration.format)]
    evaluation.calibrations = [*kept, calibration]
