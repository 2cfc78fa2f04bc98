"""EvalRun: one evaluation's run in the window — backends opened first, an EvaluationRunner over the window's
SessionRunner (so generations and judges join the panes' batches), the progress's ETA, and Stop. The cells
change in place (each holds its generation's PaneResult): the view and autosave hear their events, not this.

Where requests go is `app.evaluate.routes.Routes`: "local", a `file://` GGUF that is the main model's file,
the default judge and panes on "local" run on the main model; another GGUF or a server is opened first, through
the bridge, as Model → Backends would (not remembered), its API key from the provider's variable or the key store.
An evaluation with `similar` assertions embeds through the window's Meaning (Settings → Embedder, on its own
worker thread, kept while the setting and the main model stay the same): a `similar` cell is graded once its
output's and values' vectors are in (app/evaluate/embed_waits.py), so the GUI thread never embeds.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox

from app.evaluate import Evaluation, stats
from app.evaluate.calibration_run import CalibrationCache
from app.evaluate.code_checks import CodeRunner
from app.evaluate.routes import Routes, api_key, needed_targets
from app.evaluate.runner import EvaluationRunner
from app.evaluate.shifts import EvaluationShifts
from app.evaluate.similarity import uses_similar
from app.models import model_name
from app.session import MAIN, SessionRunner
from app.session.conversation import ALTERNATIVES_SHOWN
from app.session.evaluation import BackendTarget
from app.ui.evaluate.view import EvalView, duration, eta_seconds


def elapsed_note(evaluation: Evaluation, how: str, this_run_s: float | None = None) -> str:
    """"finished after 0:23" — the time of all its runs; after a resume, also this run's: "(0:06 this run)"."""
    total = evaluation.duration_s or 0.0
    part = this_run_s is not None and this_run_s < total  # equal: the first run is all there was
    return f"{how} after {duration(total)}" + (f" ({duration(this_run_s)} this run)" if part else "")


class EvalRun(QObject):
    sig_status = Signal(str)
    """A short note for the status bar."""
    sig_main_model = Signal()
    """Another main model was loaded (`main_model_name()`)."""

    def __init__(self, runner: SessionRunner, bridge, settings, keys, view: EvalView, show_message,
                 parent: QObject | None = None, meaning=None):
        """`keys()` is the API key store; `show_message(title, text, icon)` a non-blocking message; `meaning` the
        window's MeaningLink (its embedder serves `similar`)."""
        super().__init__(parent)
        self.runner, self.bridge, self.settings, self.keys, self.view = runner, bridge, settings, keys, view
        self.show_message = show_message
        registry = self.bridge.backends  # models on standby are routed to as well: EvaluationShifts loads them
        self.routes = Routes(lambda: self.bridge.model_info.path if self.bridge.model_info else "",
                             lambda: registry.specs() + registry.standby_specs())
        self.eval_runner: EvaluationRunner | None = None
        self.shifts: asyncio.Future | None = None  # EvaluationShifts.run: loads what is on standby for the run
        self.max_concurrency: int | None = None  # the config's evaluateOptions.maxConcurrency
        self.calibrations = CalibrationCache()  # judges calibrated in this session: never asked twice per format
        self._starting = False
        self.code_allowed, self.code = False, None
        self._started_at, self._todo = 0.0, 0
        self.meaning = meaning
        self.eta_timer = QTimer(self, interval=1000)
        self.eta_timer.timeout.connect(self._tick)
        self.bridge.sig_model_loaded.connect(lambda *_: self.sig_main_model.emit())

    @property
    def running(self) -> bool:
        return self.eval_runner is not None or self._starting

    def main_model_name(self) -> str:
        """The main model's file name without .gguf, as the status bar names it ("" when none is loaded)."""
        info = self.bridge.model_info
        return Path(info.path).stem if info else ""

    def backend_of(self, target: BackendTarget) -> str:
        return self.routes.find(target) or MAIN

    def judges(self) -> list[tuple[str, str]]:
        """The open models that can judge, as (the evaluation's judge string, a label): the main model, then every
        other open backend (a local GGUF by its path, a server by its URL)."""
        info = self.bridge.model_info
        found = [("local", f"Main model ({model_name(info.path)})" if info else "Main model")]
        return found + [(spec.path if spec.kind == "local" else spec.url, spec.name)
                        for spec in self.bridge.backends.specs()]

    def reset(self) -> None:
        """Another evaluation is shown: stop this run."""
        self._detach()
        self.view.set_eta("")

    # --- starting -----------------------------------------------------------------------------------------------
    def run(self, evaluation: Evaluation, base_dir: Path, code_allowed: bool = False) -> asyncio.Future | None:
        """Run the cells that have not finished (after opening the backends they need); None if nothing to do.
        `code_allowed`: the user agreed to run the config's code (code_consent.py); else code checks are errors."""
        if self.running or not evaluation.unfinished():
            return None
        self._starting = True
        self.code_allowed = code_allowed
        self.view.set_running(True)
        return asyncio.ensure_future(self._open_and_start(evaluation, base_dir))

    async def _open_and_start(self, evaluation: Evaluation, base_dir: Path) -> bool:
        try:
            targets = needed_targets(evaluation, base_dir)
            if self.bridge.loading:  # e.g. just after start-up: begin once the model is in
                self.sig_status.emit("Evaluation: waiting for the model to load…")
                while self.bridge.loading:
                    await asyncio.sleep(0.1)
            for target, spec in self.routes.missing(targets):
                self.sig_status.emit(f"Evaluation: connecting {spec.name}…")
                key = api_key(target, self.keys()) if spec.kind == "server" else None
                opened = await self.bridge.add_backend(spec, api_key=key, engine=self.settings.engine_fields())
                self.routes.opened(target, opened.name)
            if self.bridge.main is None and not self.bridge.backends.on_standby(MAIN) \
                    and any(self.routes.find(t) == MAIN for t in targets):
                raise RuntimeError("No model is loaded yet: wait for it to load (or open one), then Resume.")
            embed = self._embedder() if uses_similar(evaluation) else None
        except Exception as exc:  # noqa: BLE001 - a backend's own message, shown; nothing has run
            self._starting = False
            self.view.set_running(False)
            if self.view.model.evaluation is evaluation:
                self.show_message("Cannot run the evaluation", str(exc) or type(exc).__name__, QMessageBox.Warning)
            return False
        self._starting = False
        if self.view.model.evaluation is not evaluation or self.eval_runner is not None:
            return False  # replaced while backends opened
        self._start(evaluation, base_dir, embed)
        return True

    def _embedder(self):
        """The window's Meaning (Settings → Embedder, on its worker thread) for `similar`."""
        if self.meaning is None:
            raise RuntimeError("similar needs an embedder, and this window has none")
        meaning = self.meaning.sync()
        if meaning.weak:
            self.sig_status.emit(f"Evaluation: similar: {meaning.note}")
        return meaning

    def _start(self, evaluation: Evaluation, base_dir: Path, embed=None) -> None:
        self.code = CodeRunner(base_dir) if self.code_allowed else None  # its Python workers end with the run
        runner = EvaluationRunner(evaluation, self.runner, self.routes.name, base_dir, self.max_concurrency,
                                  alternatives=ALTERNATIVES_SHOWN, calibrations=self.calibrations,
                                  embed=embed, code=self.code)
        runner.events.finished.connect(self._finished)
        self.eval_runner = runner
        self._started_at, self._todo = time.monotonic(), len(evaluation.unfinished())
        self.view.set_running(True)
        self.view.set_eta("estimating…")
        self.eta_timer.start()
        self.shifts = asyncio.ensure_future(EvaluationShifts(runner, self.bridge.backends, self.sig_status.emit).run())

    def stop(self) -> None:
        """Nothing more starts and what runs is cancelled; cut-short cells stay "not run"."""
        if self.eval_runner is not None:
            self.eval_runner.cancel()

    # --- while it runs ------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.eval_runner is None:
            return
        self.eval_runner.note_time()  # the evaluation's time, autosaved with it: a crash keeps it
        done = self._todo - len(self.eval_runner.evaluation.unfinished())
        eta = eta_seconds(done, self._todo, time.monotonic() - self._started_at)
        self.view.set_eta("estimating…" if eta is None else f"ETA {duration(eta)}")

    def _finished(self) -> None:
        runner = self._detach()
        if runner is None:
            return
        totals = stats.totals(runner.evaluation)
        how = "stopped" if runner.cancelled else "finished"
        self.view.set_eta(elapsed_note(runner.evaluation, how, runner.this_run_s))
        note = (f"Evaluation {how}: {totals.successes} passed, {totals.failures} failed, {totals.errors} errors"
                + (f", {totals.unreliable} unreliable (judge failed its calibration)" if totals.unreliable else "")
                + (f", {totals.pending} not run" if totals.pending else ""))
        QTimer.singleShot(0, lambda: self.sig_status.emit(note))  # after the runner's own "finished" note

    def _detach(self) -> EvaluationRunner | None:
        runner, self.eval_runner = self.eval_runner, None
        if self.code is not None:
            self.code.close()
            self.code = None
        if runner is None:
            return None
        runner.events.finished.disconnect(self._finished)
        if not runner.done:
            runner.cancel()
        self.eta_timer.stop()
        self.view.model.flush()
        self.view.set_running(False)
        return runner
