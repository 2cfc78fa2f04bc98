"""An evaluation whose models are on standby: loaded for its run as Run all loads a pane's, then unloaded.

`EvaluationTurns(runner, registry).run()` plans with app.backends.shifts, as Run all does for panes, with one
job per backend the evaluation's cells and judges use: the models that fit beside what is loaded load in one
turn; models that do not fit together take turns (a model loaded before that a turn unloads is loaded again at
the end); a model too big even alone fails its cells with the numbers. Meanwhile the EvaluationRunner holds
every cell and judge call whose model is on standby (`EvaluationRunner.ready`) and runs the rest at once; each
turn loads its models, releases what waits for them, waits until nothing is in flight, and unloads them. A judge
call that waits for a model a finished turn unloaded gets another round. Whatever still waits at the end (a
model that failed to load) ends "error" with the reason. Runs on an asyncio loop whose thread owns the runner
(the window's qasync loop); loads and unloads on worker threads. Qt-free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from app.backends.registry import BackendRegistry
from app.backends.shifts import Plan, plan_for
from app.evaluate.routes import needed_targets
from app.evaluate.runner import EvaluationRunner

WAKE_S = 1.0  # how often a turn re-checks that nothing is in flight, besides each run's end


@dataclass(frozen=True)
class _Job:
    backend: str  # what app.backends.shifts plans: anything with a backend name


class EvaluationTurns:
    def __init__(self, runner: EvaluationRunner, registry: BackendRegistry,
                 on_status: Callable[[str], None] | None = None):
        """`on_status(text)`: a sentence for a status bar as the plan moves on."""
        self.runner, self.registry, self.on_status = runner, registry, on_status or (lambda _text: None)
        self.plans: list[Plan] = []  # every round's plan, for a caller (and tests) to read
        self._wake: asyncio.Event | None = None

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
        self._wake = asyncio.Event()
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
                plan = plan_for([_Job(name) for name in names], self.registry)
                self.plans.append(plan)
                for job, why in plan.refused:
                    runner.fail_held(why, job.backend)
                if not plan.turns:
                    break
                self.on_status(f"Evaluation: {plan.describe()}")
                await self._carry_out(plan)
        finally:
            runner.fail_held("its model was not loaded: the run stopped or the model could not be loaded")
            runner.ready = None
            ended.disconnect(self._poke)

    async def _carry_out(self, plan: Plan) -> None:
        for turn in plan.turns:
            if self.runner.cancelled or self.registry.closed:
                break
            for name in turn.load:
                await self._load(name, plan)
            self.runner.release()
            await self._until_idle()
            for name in turn.models:
                if self.registry.get(name) is not None:
                    self.on_status(f"Evaluation: unloading {plan.labels.get(name, name)}…")
                    await asyncio.to_thread(self.registry.unload, name)
        for name in plan.restore:
            if self.registry.on_standby(name) and not self.registry.closed:
                await self._load(name, plan, again=True)
        self.runner.release()
        await self._until_idle()

    async def _load(self, name: str, plan: Plan, again: bool = False) -> None:
        label = plan.labels.get(name, name)
        self.on_status(f"Evaluation: loading {label}{' again' if again else ''}…")
        try:
            await asyncio.to_thread(self.registry.load, name)
        except Exception as exc:  # the engine's own message (a broken file, out of memory): on its cells
            self.runner.fail_held(f"Could not load {label}{' again' if again else ''}: {exc}", name)

    async def _until_idle(self) -> None:
        while not self.runner.idle and not self.registry.closed:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), WAKE_S)
            except TimeoutError:
                pass

    def _poke(self, *_args) -> None:
        if self._wake is not None:
            self._wake.set()


__all__ = ["EvaluationTurns"]
