"""An evaluation whose models are on standby: loaded for its run as Run all loads a pane's, then unloaded.

`EvaluationShifts(runner, registry).run()` plans with app.backends.shifts, as Run all does for panes, with one
job per backend the evaluation's cells and judges use: the models that fit beside what is loaded load in one
shift; models that do not fit together run in shifts (a model loaded before that a shift unloads is loaded again
at the end); a model too big even alone fails its cells with the numbers. Meanwhile the EvaluationRunner holds
every cell and judge call whose model is on standby (`EvaluationRunner.ready`) and runs the rest at once; each
shift (app.backends.shifts.ShiftRun) loads its models, releases what waits for them, waits until nothing is in
flight, and unloads them. A judge call that waits for a model a finished shift unloaded gets another round.
Whatever still waits at the end (a model that failed to load) ends "error" with the reason. Runs on an asyncio
loop whose thread owns the runner (the window's qasync loop); loads and unloads on worker threads. Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from app.backends.registry import BackendRegistry
from app.backends.shifts import BackendJob, Plan, Shift, ShiftRun, plan_for
from app.evaluate.routes import needed_targets
from app.evaluate.runner import EvaluationRunner


class EvaluationShifts:
    def __init__(self, runner: EvaluationRunner, registry: BackendRegistry,
                 on_status: Callable[[str], None] | None = None):
        """`on_status(text)`: a sentence for a status bar as the plan moves on."""
        self.runner, self.registry, self.on_status = runner, registry, on_status or (lambda _text: None)
        self.plans: list[Plan] = []  # every round's plan, for a caller (and tests) to read
        self._shifts: ShiftRun | None = None

    def _names(self) -> list[str]:
        names = []
        try:
            targets = needed_targets(self.runner.evaluation, self.runner.base_dir)
        except ValueError:  # a judge that cannot judge: its cells say so when they are graded
            return []
        for target in targets:
            try:
                names.append(self.runner.route(target))
            except (RuntimeError, ValueError):  # not connected: its cells say so when they start
                pass
        return list(dict.fromkeys(names))

    async def run(self) -> None:
        """Start the evaluation and carry its plan out; returns when nothing is held or in flight. Never raises for
        a model that fails to load (its cells end "error" with the engine's message)."""
        runner = self.runner
        ended = runner.runner.events.ended
        ended.connect(self._poke)
        runner.ready = lambda name: not self.registry.on_standby(name)
        try:
            names = self._names()
            runner.start()
            names += sorted(runner.held_for() - set(names))
            for _ in range(len(names) + 1):  # each round loads at least one model, or the loop ends
                if runner.cancelled or self.registry.closed or not runner.held_for():
                    break
                if self.plans:  # a later round: only what still waits
                    names = sorted(runner.held_for())
                plan = plan_for([BackendJob(name) for name in names], self.registry)
                self.plans.append(plan)
                for job, why in plan.refused:
                    runner.fail_held(why, job.backend)
                if not plan.shifts:
                    break
                self.on_status(f"Evaluation: {plan.describe()}")
                self._shifts = ShiftRun(plan, self.registry, self)
                await self._shifts.run()
                runner.release()  # what waited for the models loaded again
                await self._shifts.wait(lambda: not runner.idle)
        finally:
            self._shifts = None
            runner.fail_held("its model was not loaded: the run stopped or the model could not be loaded")
            runner.ready = None
            ended.disconnect(self._poke)

    def _poke(self, *_args) -> None:
        if self._shifts is not None:
            self._shifts.poke()

    # --- the ShiftWork that ShiftRun runs -----------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        return self.runner.cancelled

    def start(self, shift: Shift, ready: Sequence[str]) -> None:
        self.runner.release()

    def busy(self, ready: Sequence[str]) -> bool:
        return not self.runner.idle

    def load_failed(self, name: str, why: str, shift: Shift | None) -> None:
        self.runner.fail_held(why, name)

    def stage(self, stage: str, index: int, models: tuple[str, ...]) -> None:
        if stage == "restoring":
            self.on_status(f"Evaluation: loading {self._labels(models)} again…")
        elif stage == "loading" and (waiting := [m for m in models if self.registry.on_standby(m)]):
            self.on_status(f"Evaluation: loading {self._labels(waiting)}…")
        elif stage == "unloading" and (loaded := [m for m in models if self.registry.get(m) is not None]):
            self.on_status(f"Evaluation: unloading {self._labels(loaded)}…")

    def _labels(self, names: Sequence[str]) -> str:
        return ", ".join(self._shifts.label(name) for name in names)


__all__ = ["EvaluationShifts"]
