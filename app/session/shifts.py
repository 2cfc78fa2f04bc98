"""ModelTurns: the SessionController's `loader`, which plans and starts runs whose panes' models are on standby.

SessionController hands it the panes whose local model is on standby; it plans them with app.backends.shifts and
carries the plan out with an app.session.in_turn.InTurnRun, as a task on the running asyncio loop. One plan at a
time: while one runs, other standby panes are refused with `ModelTurns.BUSY`. `controller_for` builds a
controller with its ModelTurns, so a front end gets models in turn with its controller, whatever views it shows.
Qt-free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from app.backends.registry import BackendRegistry
from app.backends.shifts import plan_for
from app.session import conversation
from app.session.controller import RunAll, SessionController
from app.session.in_turn import InTurnEvents, InTurnRun
from app.session.runner import SessionRunner
from app.session.state import PaneSpec, SessionModel


class ModelTurns:
    """Where a front end's runs go when a pane's model is on standby: SessionController hands such panes here
    (`takes`, `start`, as its `loader`: see `controller_for`), and the plan runs as a task on the running asyncio
    loop. One plan at a time; `events` forwards the current plan's."""

    BUSY = "Other models are running in turn: run this pane again when they have finished (or Stop all)."

    def __init__(self, controller: SessionController, registry: BackendRegistry):
        self.controller, self.registry = controller, registry
        self.events = InTurnEvents()
        self.current: InTurnRun | None = None
        self.task: asyncio.Future | None = None

    def takes(self, panes: Sequence[PaneSpec]) -> bool:
        """Whether any of the panes that can run needs a model on standby."""
        return any(self.registry.on_standby(p.backend) and conversation.can_run(p) for p in panes)

    def start(self, panes: Sequence[PaneSpec], use_draft: bool = True) -> RunAll:
        """Plan and start: the panes that need no load start now, the rest when their model is loaded. While
        a plan runs, panes whose model is on standby are listed as problems and the others start as usual."""
        if self.current is not None:
            waiting = [p for p in panes if self.registry.on_standby(p.backend)]
            ids = {p.id for p in waiting}
            report = self.controller.run_many([p for p in panes if p.id not in ids], use_draft)
            return RunAll(report.started, report.skipped + len(waiting),
                          report.problems + tuple((p, self.BUSY) for p in waiting))
        runner = self.controller.runner
        planned = plan_for(panes, self.registry, runnable=lambda p: conversation.can_run(p) and not runner.busy(p))
        driver = InTurnRun(planned, self.controller, self.registry, use_draft)
        for name in ("progress", "problems", "finished"):  # relayed through a function (psygnal 0.16 calls a
            relay = getattr(self.events, name)  # connected `emit` of another signal once as it connects it)
            getattr(driver.events, name).connect(lambda value, relay=relay: relay.emit(value))
        self.current = driver
        self.events.started.emit(planned)
        try:
            begun = driver.begin()
            self.task = asyncio.ensure_future(self._drive(driver))
        except BaseException:
            self.current = None
            raise
        started = begun.started + sum(len(t.panes) for t in planned.turns)
        return RunAll(started, max(0, len(panes) - started - len(planned.refused)), begun.problems)

    async def _drive(self, driver: InTurnRun) -> None:
        try:
            await driver.run()
        finally:
            self.current, self.task = None, None

    def cancel(self) -> None:
        if self.current is not None:
            self.current.cancel()


def controller_for(session: SessionModel, runner: SessionRunner, registry: BackendRegistry) -> SessionController:
    """The controller of a session whose panes may run on models on standby: its `loader` is a ModelTurns over
    `registry`, so Run all, a group's run and a pane's own Run plan models in turn, whatever views show them."""
    controller = SessionController(session, runner)
    controller.loader = ModelTurns(controller, registry)
    return controller
