"""Asking a judge the calibration questions (app/evaluate/calibration.py says what calibration is and when a judge
is reliable): `schedule` finds the judge × format pairs an evaluation's unfinished cells need that this session
has not calibrated (a `CalibrationCache` holds those it has, by backend, model and format) and makes a
`CalibrationRun` for each; a run's judge calls are ordinary JudgeCalls, answered through the judge's backend
like any other. Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable

from app.evaluate import calibration, graders
from app.evaluate.calibration import Need
from app.evaluate.checks import CheckError, Output
from app.evaluate.config import Suite
from app.evaluate.scoring import CellGrader, JudgeCall
from app.evaluate.templates import render_prompt, render_value
from app.session.evaluation import Evaluation, JudgeCalibration


class CalibrationRun:
    """One judge's calibration for one format: `start()` gives judge calls, `reply()` takes each answer (and may
    give more, for g-eval); when `done`, `result()` is its JudgeCalibration."""

    def __init__(self, need: Need, name: str, suite: Suite, base_dir=None):
        self.need, self.name = need, name
        self.questions: dict[int, tuple[str, bool | int, object]] = {}  # q -> (description, expected, grader)
        self.answers: dict[int, bool] = {}
        self.pending: set[tuple] = set()
        prompts = [variant.prompt.raw for variant in suite.variants[:2]]
        for case in suite.cases:
            assertion = next((a for a in case.assertions if calibration.KINDS.get(a.base_type) == need.kind), None)
            if assertion is None:
                continue
            assertion = assertion.model_copy(update={"rubric_prompt": need.rubric_prompt, "provider": None})
            if need.kind == "select-best":
                best = int(case.metadata.get("best", 0))
                outputs = [render_prompt(raw, case.vars) for raw in prompts]
                criteria = str(render_value(assertion.value, case.vars))
                for order in (outputs, outputs[::-1]):
                    shown = best if order is outputs else len(outputs) - 1 - best
                    label = f"{case.description} ({'as written' if order is outputs else 'swapped'})"
                    self.questions[len(self.questions)] = (label, shown, (order, criteria, case.vars, assertion))
            else:
                expected = str(case.metadata.get("expect", "pass")).lower() == "pass"
                test = case.model_copy(update={"assertions": [assertion], "threshold": None})
                output = Output(text=str(case.provider_output or ""))
                grader = CellGrader(test, output, render_prompt(prompts[0], case.vars), base_dir)
                self.questions[len(self.questions)] = (case.description, expected, grader)

    def start(self) -> list[JudgeCall]:
        calls = []
        for q, (_label, _expected, asked) in self.questions.items():
            if isinstance(asked, CellGrader):
                calls += self._wrap(q, asked.start())
                if asked.done:
                    self._settle(q)
            else:
                order, criteria, variables, assertion = asked
                rubric = graders.load_rubric_prompt(assertion.rubric_prompt)
                request = graders.select_best_request(criteria, list(order), variables, rubric)
                calls.append(JudgeCall(("calibration", q), request, self.need.provider))
                self.pending.add(("calibration", q))
        return calls

    def _wrap(self, q: int, calls: list[JudgeCall]) -> list[JudgeCall]:
        wrapped = [JudgeCall(("calibration", q, call.key), call.request, self.need.provider) for call in calls]
        self.pending.update(call.key for call in wrapped)
        return wrapped

    def reply(self, key: tuple, text: str = "", error: str | None = None) -> list[JudgeCall]:
        self.pending.discard(key)
        q = key[1]
        _label, expected, asked = self.questions[q]
        if not isinstance(asked, CellGrader):
            order, criteria, _vars, assertion = asked
            verdicts = graders.parse_select_best(text, len(order), criteria, assertion)
            self.answers[q] = error is None and verdicts[expected].passed
            return []
        more = self._wrap(q, asked.reply(key[2], text, error))
        if asked.done:
            self._settle(q)
        return more

    def _settle(self, q: int) -> None:
        _label, expected, grader = self.questions[q]
        try:
            self.answers[q] = grader.result().passed == expected
        except CheckError:  # no usable answer: wrong
            self.answers[q] = False

    @property
    def done(self) -> bool:
        return not self.pending and len(self.answers) == len(self.questions)

    def result(self) -> JudgeCalibration:
        misses = [self.questions[q][0] for q in sorted(self.answers) if not self.answers[q]]
        return JudgeCalibration(judge=self.need.judge, format=self.need.format, name=self.name,
                                correct=sum(self.answers.values()), total=len(self.questions), done=self.done,
                                misses=misses)


class CalibrationCache:
    """Calibrations already made in this session, by (backend, model, format): a judge is asked the calibration
    questions once per format, not per cell or per run."""

    def __init__(self):
        self._found: dict[tuple, JudgeCalibration] = {}

    def get(self, key: tuple) -> JudgeCalibration | None:
        return self._found.get(key)

    def put(self, key: tuple, calibration: JudgeCalibration) -> None:
        if calibration.done:
            self._found[key] = calibration




def schedule(evaluation: Evaluation, cases: set[int], backend: Callable[[object], tuple[str, str]],
             cache: CalibrationCache, base_dir=None) -> list[CalibrationRun]:
    """The calibrations to run for the cases' judges (and any cut short before), each put into the evaluation
    at once (not done yet); a calibration the cache holds goes in as it is. `backend(provider)` gives a judge's
    (backend name, model name), raising RuntimeError / ValueError when it cannot (its cells say why)."""
    wanted = {need.key for need in calibration.needs(evaluation, cases)}
    wanted |= {(c.judge, c.format) for c in evaluation.calibrations if not c.done}
    needs = [need for need in calibration.needs(evaluation) if need.key in wanted]
    if not needs:
        return []
    try:
        suite = calibration.calibration_suite()
    except Exception as exc:  # noqa: BLE001 - a broken calibration file: every such judge says why
        for need in needs:
            calibration.with_calibration(evaluation, JudgeCalibration(
                judge=need.judge, format=need.format, name=f"calibration set unusable: {exc}", done=True))
        return []
    runs = []
    for need in needs:
        try:
            name, label = backend(need.provider)
        except (RuntimeError, ValueError):
            continue
        found = cache.get((name, label, need.format))
        if found is not None:
            calibration.with_calibration(evaluation, found.model_copy(update={"judge": need.judge}))
            continue
        run = CalibrationRun(need, label, suite, base_dir)
        run.cache_key = (name, label, need.format)
        calibration.with_calibration(evaluation, run.result())
        runs.append(run)
    return runs
