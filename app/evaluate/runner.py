"""EvaluationRunner: an Evaluation's unfinished cells, generated and judged through the SessionRunner.

Every cell is queued at once; requests (generations and judge calls together) are submitted while fewer than
`max_concurrency` are in flight (no bound by default: the engine batches whatever it holds), judge calls before
new cells so cells finish as the run goes. Cells, their grading and the evaluation change only inside `start`,
`cancel` and the SessionRunner's `pump` (its `on_finish` callbacks), i.e. on the thread that owns the runner.
A cell ends pass, fail or error, except after `cancel`: a cell whose generation or judging was cut short is
"pending" again, so a resume runs it. A select-best row is judged once, after all its cells are final (also
when `start` finds such a row already final, from an earlier run). A cell's generation streams into its own
`result` as the runner's pump applies it; the cells' own events tell views and autosave (nothing is relayed
here). Before a judge's verdicts count it is calibrated (app/evaluate/calibration.py): for every judge ×
rubric format the unfinished cells use, its calibration questions go first in the judge queue, unless this
session's `CalibrationCache` already holds that backend's model in that format; the result goes into
`evaluation.calibrations`. While models on standby run in shifts (app.evaluate.shifts sets `ready`), a cell or
judge call whose backend does not take requests yet is held (holds.py) until `release`, or ended by `fail_held`.
A cell whose grading runs the config's code is graded on a worker thread (code_waits.py), its result
applied when the SessionRunner's pump runs what was posted to it. A cell whose `similar` texts are being embedded
on the embedder's thread is graded once they are in
(embed_waits.py). The evaluation's `duration_s` adds this run's time to its earlier runs', kept current
as requests end (and whenever the owner calls `note_time`), so a crash mid-run loses none of it that autosave had
seen. Qt-free.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime, timezone

from psygnal import Signal, SignalGroup

from app.engine import Completion
from app.evaluate import calibration, calibration_run, cells, code_checks, max_score, webhook
from app.evaluate.calibration_run import CalibrationCache, CalibrationRun
from app.evaluate.check_types import CheckError
from app.evaluate.code_waits import CodeWaits
from app.evaluate.embed_waits import EmbedWaits
from app.evaluate.holds import Holds
from app.evaluate.routes import judge_target
from app.evaluate.scoring import CellGrader, JudgeCall
from app.evaluate.templates import TemplateProblem
from app.evaluate.user_turns import UserTurns, called_back
from app.models import model_name
from app.session.evaluation import BackendTarget, CellResult, Evaluation
from app.session.runner import SessionRunner
from app.session.state import PaneResult


class EvaluationEvents(SignalGroup):
    finished = Signal()
    """Nothing is queued or in flight any more (every cell final, or the run was cancelled and has drained)."""


class EvaluationRunner:
    def __init__(self, evaluation: Evaluation, runner: SessionRunner, route: Callable[[BackendTarget], str],
                 base_dir=None, max_concurrency: int | None = None, alternatives: int = 0,
                 calibrations: CalibrationCache | None = None, embed=None, code=None):
        """`route(target)` names the backend (for `runner.backends.submit`) a variant's or a judge's target
        runs on; `base_dir` resolves relative files (rubric prompts, judge GGUFs). `alternatives` > 0 asks
        every generation for that many likely tokens per position (the window does, so a cell opened as a
        pane shows probabilities and can branch); they stay in the cell's result. `calibrations` is the session's
        cache of judge calibrations (a new one when not given). `embed(texts) -> vectors` serves `similar` (None:
        a `similar` cell is an error that says to name an embedder); one that can `prefetch` (the window's
        Meaning) embeds on its own thread and a cell is graded once its vectors are in (embed_waits.py)."""
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max concurrency must be at least 1, got {max_concurrency}")
        self.evaluation, self.runner, self.route = evaluation, runner, route
        self.base_dir, self.max_concurrency, self.alternatives = base_dir, max_concurrency, alternatives
        self.embed, self.code = embed, code
        self.events = EvaluationEvents()
        self.calibrations = calibrations if calibrations is not None else CalibrationCache()
        self.cancelled = False
        self._cells: deque[CellResult] = deque()
        self._judge_calls: deque[tuple[CellGrader | None, CellResult | None, JudgeCall]] = deque()
        self._in_flight: dict[int, object] = {}  # request id -> its handle
        self._asked: set[tuple] = set()  # select-best rows already queued
        self._started = 0.0
        self._earlier_s = 0.0  # the evaluation's earlier runs (before a Stop, or a crash)
        self._finished_emitted = False
        # Set by app.evaluate.shifts when models on standby run in shifts: whether a backend (by name) takes
        # requests now. A cell or judge call whose backend does not is held until `release`, never failed for it.
        self.ready: Callable[[str], bool] | None = None
        self._held = Holds(route)
        self._waiting = EmbedWaits(embed, self._vectors_arrived)  # cells waiting for their `similar` embeddings
        self.mcp = None  # an EvalMcp when variants use MCP servers (mcp_loop.py); `poll_tools` drives it
        self._coding = CodeWaits(runner.post, self._code_graded)  # cells whose grading runs code (code_waits.py)
        self._vector_waits: dict[int, CellResult] = {}  # cells whose answer-relevance waits for its vectors
        # storeOutputAs: promptfoo then runs its cells one at a time, test by test (each test's repeats, then
        # its variants), and a later cell's vars are overwritten by the outputs stored so far (`registers`)
        self.serial = any(case.options.store_output_as for case in evaluation.cases)
        self.registers: dict[str, object] = {}
        self._active: CellResult | None = None  # serial: the cell between its start and its conclusion
        self.talks = UserTurns(self)  # cells that talk with a simulated user (user_turns.py)

    # --- driving (owning thread) -------------------------------------------------------------------------------
    def start(self) -> None:
        if self.evaluation.started_at is None:  # a resume keeps the first run's start
            self.evaluation.started_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        self._started, self._earlier_s = time.perf_counter(), self.evaluation.duration_s or 0.0
        self._cells.extend(self.evaluation.unfinished())
        if self.serial:
            self._cells = deque(sorted(self._cells, key=lambda c: (c.case, c.repeat, c.variant)))
            self._stored_before()
        self._calibrate()
        for case, repeat in sorted({(c.case, c.repeat) for c in self.evaluation.cells}):
            self._maybe_select_best(case, repeat)
        self._top_up()

    def _stored_before(self) -> None:
        """A resume: the outputs that cells finished in an earlier run stored (as their text: a transformed one
        is not kept, so a test whose output went through a transform stores nothing then)."""
        for cell in sorted(self.evaluation.cells, key=lambda c: (c.case, c.repeat, c.variant)):
            case = self.evaluation.cases[cell.case]
            if case.options.store_output_as and cell.status in ("pass", "fail") and cell.output and not (
                    case.options.transform or self.evaluation.variants[cell.variant].transform):
                self.registers[case.options.store_output_as] = cell.output

    def drive(self, timeout: float | None = None) -> bool:
        """Pump the SessionRunner on this thread until done (True) or `timeout` seconds pass (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            self.runner.wait(0.2 if left is None else min(0.2, left))
            self.runner.pump()
        return True

    def cancel(self) -> None:
        """Submit nothing more and cancel what is in flight; the cut-short cells end "pending" as they drain."""
        self.cancelled = True
        self._cells.clear()  # never started: still pending
        for _name, kind, item in self._held.take():
            if kind == "judge" and item[1] is not None:
                self._reset(item[1])
        for _grader, cell, _call in self._judge_calls:
            if cell is not None:
                self._reset(cell)
        self._judge_calls.clear()
        for cell in [*self._waiting.cancel(), *self._coding.cancel(), *self._vector_waits.values()]:
            self._reset(cell)
        self._vector_waits.clear()
        for handle in list(self._in_flight.values()):
            handle.cancel()
        self._check_done()

    def note_time(self) -> None:
        """The evaluation's `duration_s` is its earlier runs' time plus this one's so far."""
        if self._started and not self._finished_emitted:
            self.evaluation.duration_s = self._earlier_s + time.perf_counter() - self._started

    @property
    def this_run_s(self) -> float:
        """How long this run has taken (all of `duration_s` when it is the first)."""
        return (self.evaluation.duration_s or 0.0) - self._earlier_s

    @property
    def done(self) -> bool:
        return self.idle and not self._held

    @property
    def idle(self) -> bool:
        """Nothing queued or in flight: what is left (if anything) is held for a model not loaded yet."""
        return (not self._cells and not self._judge_calls and not self._in_flight and not self._waiting
                and not self._coding and not self._vector_waits and not (self.mcp is not None and self.mcp.waiting))

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    # --- held for a model on standby ------------------------------------------------------------------------------
    def held_for(self) -> set[str]:
        """The backends that held cells or judge calls wait for."""
        return self._held.backends()

    def release(self) -> None:
        """Queue again what was held (its backend may take requests now; what is still not ready is held again)."""
        for _name, kind, item in self._held.take():
            if kind == "cell":
                self._cells.append(item[0])
            else:
                self._judge_calls.append(item)
        self._top_up()

    def fail_held(self, why: str, name: str | None = None) -> None:
        """End what waits for `name` (None: for any backend) with `why`: its model could not be loaded."""
        for _name, kind, item in self._held.take(name):
            if kind == "cell":
                item[0].status, item[0].error = "error", why
                self._concluded(item[0])
            else:
                self._judged(*item, None, why)
        self._top_up()

    def _hold(self, kind: str, item: tuple, target: Callable[[], BackendTarget | None]) -> bool:
        return self._held.hold(self.ready, kind, item, target)

    # --- calibration --------------------------------------------------------------------------------------------
    def _calibrate(self) -> None:
        """Queue, first, the calibration questions of every judge × format the unfinished cells use that this
        session has not calibrated yet (calibration_run.schedule)."""
        runs = calibration_run.schedule(self.evaluation, {cell.case for cell in self._cells}, self._judge_backend,
                                        self.calibrations, self.base_dir)
        self._judge_calls.extendleft(reversed([(run, None, call) for run in runs for call in run.start()]))

    def _judge_backend(self, provider) -> tuple[str, str]:
        """The backend a judge's calls go to, and its model as a user knows it (a GGUF's name, a server's
        model); raises RuntimeError / ValueError when it cannot be named."""
        name = self.route(judge_target(provider, self.evaluation.judge, self.base_dir))
        get = getattr(self.runner.backends, "get", None)
        info = getattr(get(name) if get is not None else None, "model_info", None)
        if info is not None and info.kind == "local" and info.path:
            return name, model_name(info.path)
        return name, (info.model if info is not None and info.model else None) or name

    def _calibrated(self, run: CalibrationRun) -> None:
        result = run.result()
        self.calibrations.put(run.cache_key, result)
        calibration.with_calibration(self.evaluation, result)

    # --- steps -------------------------------------------------------------------------------------------------
    def _top_up(self) -> None:
        while not self.cancelled and (self.max_concurrency is None or len(self._in_flight) < self.max_concurrency):
            if self._judge_calls:
                item = self._judge_calls.popleft()
                if not self._hold("judge", item, lambda item=item: judge_target(item[2].judge, self.evaluation.judge,
                                                                      self.base_dir)):
                    self._submit_judge(*item)
            elif self._cells and not (self.serial and self._active is not None):
                cell = self._cells.popleft()
                if not self._hold("cell", (cell,), lambda cell=cell: self._generates_on(cell)):
                    self._start_cell(cell)
            else:
                break
        self._check_done()

    def _generates_on(self, cell: CellResult) -> BackendTarget | None:
        target = self.evaluation.variants[cell.variant].target
        return None if not target.needs_backend or self.evaluation.cases[cell.case].provider_output is not None \
            else target

    def _submit(self, request, target: BackendTarget, on_finish, result: PaneResult | None = None) -> None:
        handle = self.runner.submit(request, self.route(target), PaneResult() if result is None else result,
                                    lambda result, completion: self._ended(handle.id, result, completion, on_finish))
        self._in_flight[handle.id] = handle

    def _ended(self, request_id: int, result: PaneResult, completion: Completion, on_finish) -> None:
        self._in_flight.pop(request_id, None)
        self.note_time()
        on_finish(result, completion)
        self._top_up()

    def _start_cell(self, cell: CellResult) -> None:
        if self.serial:
            self._active = cell
        if cell.status == "grading" and cell.result.state.value == "done":  # judged again (another judge)
            return self._grade(cell)
        if self.code is not None and self.evaluation.variants[cell.variant].prompt.exec is not None:
            return self._coding.start(cell, lambda: self._prepare(cell), self._prepared_later)  # runs a command
        self._prepared(cell, self._prepare(cell))

    def _prepare(self, cell: CellResult):
        try:
            return cells.prepare(self.evaluation, cell, self.code, self.registers)
        except (TemplateProblem, CheckError) as exc:
            return exc

    def _prepared_later(self, cell: CellResult, prepared) -> None:
        self._prepared(cell, prepared)
        self._top_up()

    def _prepared(self, cell: CellResult, prepared) -> None:
        if isinstance(prepared, TemplateProblem):
            cells.fail_prepare(cell, prepared)
            return self._concluded(cell)
        if isinstance(prepared, CheckError):
            cell.status, cell.error = "error", str(prepared)
            return self._concluded(cell)
        cells.start(cell, prepared)
        if prepared.calls_code:
            return self._call_provider(cell)
        if prepared.request is None:
            return self._grade(cell)
        if self.evaluation.cases[cell.case].provider:
            return self.talks.start(cell, prepared)
        request = prepared.request
        if self.alternatives > request.logprobs:
            request = dataclasses.replace(request, logprobs=self.alternatives)
        try:
            self._submit(request, self.evaluation.variants[cell.variant].target,
                         lambda result, completion: self._generated(cell, result, completion, request), cell.result)
        except (RuntimeError, ValueError, OSError, ConnectionError) as exc:
            cell.status, cell.error = "error", str(exc)
            return self._concluded(cell)

    def _generated(self, cell: CellResult, result: PaneResult, completion: Completion, request=None) -> None:
        calls = None
        if self.mcp is not None and request is not None and completion.finish_reason not in ("error", "cancelled") \
                and not self.cancelled:
            calls = self.mcp.dispatch(cell, request, completion)
            if calls is None:  # its calls went to their servers: the next round comes from poll_tools
                return None
        end = result.t_last if result.t_last is not None else time.perf_counter()
        latency_ms = (end - result.t_submit) * 1000 if result.t_submit is not None else None
        cells.record(cell, completion, latency_ms)
        if calls:
            cell.result.tool_calls = calls
        if cell.status == "grading" and self.evaluation.variants[cell.variant].callbacks and cell.result.tool_calls:
            return self._coding.start(cell, lambda: called_back(self, cell), self._code_graded)  # tool_callbacks.py
        if cell.status == "grading":
            return self._grade(cell)
        if cell.status == "pending":  # cancelled: it runs again on a resume
            return None
        self._concluded(cell)

    def poll_tools(self) -> None:
        """Cells whose MCP answers are all in take their next round (call it on the runner's thread)."""
        if self.mcp is None:
            return
        for cell, request in self.mcp.ready():
            cell.result = PaneResult()
            self._submit(request, self.evaluation.variants[cell.variant].target,
                         lambda result, completion, cell=cell, request=request: self._generated(
                             cell, result, completion, request), cell.result)

    def _grade(self, cell: CellResult) -> None:
        case = self.evaluation.cases[cell.case]
        if self._waiting.awaits(case, cell):
            return None
        variant = self.evaluation.variants[cell.variant]
        if (self.code is not None and code_checks.code_uses([case], variants=[variant])) or webhook.used(case):
            # graded on a worker thread (code_waits.py): code, or a web hook's POST, never holds up this thread
            return self._coding.start(cell, lambda: self._start_grader(cell))
        self._graded(cell, self._start_grader(cell))

    def _call_provider(self, cell: CellResult) -> None:
        """A custom provider's cell: its code gives the output, then the cell is graded, on a worker thread."""
        def work():
            try:
                text, latency, tokens = cells.call_provider(self.evaluation, cell, self.code, self.registers)
            except CheckError as exc:
                return str(exc)
            return text, latency, tokens, self._start_grader(cell, text)

        def back(cell: CellResult, done) -> None:
            if isinstance(done, str):
                cell.status, cell.error = "error", done
                self._concluded(cell)
                return self._top_up()
            text, latency, tokens, started = done
            cells.given(cell, text, latency, tokens)
            self._code_graded(cell, started)

        self._coding.start(cell, work, back)

    def _start_grader(self, cell: CellResult, text: str | None = None) -> tuple[CellGrader, list] | str:
        """The cell's grader and its first judge calls, or the error that ends the cell (any thread)."""
        try:
            grader = cells.grader(self.evaluation, cell, self.base_dir, self.embed, self.code, text, self.registers)
            return grader, grader.start()
        except CheckError as exc:  # a transform that failed, or code not allowed
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - a grader's failure is that cell's error, not the run's
            return f"grading failed: {exc}"

    def _code_graded(self, cell: CellResult, started) -> None:
        if self.cancelled:
            self._reset(cell)
            return self._check_done()
        self._graded(cell, started)
        self._top_up()

    def _graded(self, cell: CellResult, started: tuple[CellGrader, list] | str) -> None:
        if isinstance(started, str):
            cell.status, cell.error = "error", started
            return self._concluded(cell)
        grader, calls = started
        if calls and self.cancelled:  # its judges will not be asked now: it runs again on a resume
            return self._reset(cell)
        grader.resumed = lambda grader, more, cell=cell: self._resumed(cell, grader, more)
        self._judge_calls.extend((grader, cell, call) for call in calls)
        if grader.done:
            self._conclude(cell, grader)

    def _submit_judge(self, grader: CellGrader | None, cell: CellResult | None, call: JudgeCall) -> None:
        try:
            target = judge_target(call.judge, self.evaluation.judge, self.base_dir)
            self._submit(call.request, target, lambda _result, completion: self._judged(grader, cell, call,
                                                                                        completion))
        except (RuntimeError, ValueError, OSError, ConnectionError) as exc:
            self._judged(grader, cell, call, None, str(exc))

    def _judged(self, grader: CellGrader | None, cell: CellResult | None, call: JudgeCall,
                completion: Completion | None, failure: str | None = None) -> None:
        if completion is not None and completion.finish_reason == "cancelled" and self.cancelled:
            return self._reset(cell) if cell is not None else None
        text = completion.text if completion is not None else ""
        if failure is None and completion is not None and completion.finish_reason in ("error", "cancelled"):
            failure = completion.error or completion.finish_reason
        if grader is None:  # a select-best row
            _kind, case, repeat = call.key
            cells.apply_select_best(self.evaluation, case, repeat, text, failure)
            return
        if isinstance(grader, CalibrationRun):
            self._judge_calls.extendleft((grader, None, more) for more in grader.reply(call.key, text, failure))
            if grader.done:
                self._calibrated(grader)
            return
        try:
            more = grader.reply(call.key, text, failure)
        except Exception as exc:  # noqa: BLE001 - as in _grade
            cell.status, cell.error = "error", f"grading failed: {exc}"
            return self._concluded(cell)
        if more and self.cancelled:
            return self._reset(cell)
        self._judge_calls.extend((grader, cell, next_call) for next_call in more)
        if grader.waiting_vectors:  # answer-relevance: its questions are being embedded (scoring.py)
            self._vector_waits[id(cell)] = cell
        if grader.done:
            self._conclude(cell, grader)

    def _resumed(self, cell: CellResult, grader: CellGrader, more: list) -> None:
        """A grader's flow went on once its vectors were in (the embedder's answer, on this thread)."""
        if self._vector_waits.pop(id(cell), None) is None or self.cancelled:
            return self._check_done()
        if grader.waiting_vectors:
            self._vector_waits[id(cell)] = cell
        self._judge_calls.extend((grader, cell, call) for call in more)
        if grader.done:
            self._conclude(cell, grader)
        self._top_up()

    def _vectors_arrived(self, cell: CellResult) -> None:
        if self.cancelled:
            self._reset(cell)
            return self._check_done()
        self._grade(cell)
        self._top_up()

    def _conclude(self, cell: CellResult, grader: CellGrader) -> None:
        if grader.scores_with_code and self.code is not None and not grader.computed:
            # the test's assertScoringFunction is code: it runs on a worker thread, then the cell concludes
            return self._coding.start(cell, grader.finish, lambda cell, _none: self._concluded_later(cell, grader))
        cells.conclude(cell, grader)
        name = self.evaluation.cases[cell.case].options.store_output_as
        if name and grader.output.value:  # promptfoo stores the output after transforms, when there is one
            self.registers[name] = grader.output.value
        self._concluded(cell)

    def _concluded_later(self, cell: CellResult, grader: CellGrader) -> None:
        if self.cancelled:
            self._reset(cell)
            return self._check_done()
        self._conclude(cell, grader)
        self._top_up()

    def _concluded(self, cell: CellResult) -> None:
        if self._active is cell:
            self._active = None
        self._maybe_select_best(cell.case, cell.repeat)

    def _maybe_select_best(self, case: int, repeat: int) -> None:
        call = cells.select_best_call(self.evaluation, case, repeat)
        if call is not None and call.key not in self._asked and not self.cancelled:
            self._asked.add(call.key)
            self._judge_calls.append((None, None, call))
        max_score.apply(self.evaluation, case, repeat)  # a finished row's max-score (after its select-best)

    def _reset(self, cell: CellResult) -> None:
        if self._active is cell:
            self._active = None
        if not cell.finished:
            cell.status = "pending"

    def _check_done(self) -> None:
        if self.done and not self._finished_emitted:
            self.note_time()
            self._finished_emitted = True
            self.events.finished.emit()
