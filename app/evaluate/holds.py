"""What an evaluation holds back for a model on standby: cells and judge calls whose backend is not ready yet.

A mixin of `EvaluationRunner` (it uses the runner's queues, `ready`, `route` and `_concluded` / `_judged` /
`_top_up`). An item is held when its backend can be named and says it is not ready; `release` queues every held
item again (what is still not ready is held again), and `fail_held` ends what waits for a model that could not
be loaded, with the reason. Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable

from app.session.evaluation import BackendTarget


class StandbyHolds:
    def held_for(self) -> set[str]:
        """The backends that held cells or judge calls wait for."""
        return {name for name, _kind, _item in self._held}

    def release(self) -> None:
        """Queue again what was held (its backend may take requests now; what is still not ready is held again)."""
        held, self._held = self._held, []
        for _name, kind, item in held:
            if kind == "cell":
                self._cells.append(item[0])
            else:
                self._judge_calls.append(item)
        self._top_up()

    def fail_held(self, why: str, name: str | None = None) -> None:
        """End what waits for `name` (None: for any backend) with `why`: its model could not be loaded."""
        failing = [entry for entry in self._held if name is None or entry[0] == name]
        self._held = [entry for entry in self._held if entry not in failing]
        for _name, kind, item in failing:
            if kind == "cell":
                item[0].status, item[0].error = "error", why
                self._concluded(item[0])
            else:
                self._judged(*item, None, why)
        self._top_up()

    def _hold(self, kind: str, item: tuple, target: Callable[[], BackendTarget | None]) -> bool:
        """Hold the item when its backend is not `ready` (a model on standby); False: go on with it now (also when
        its backend cannot be named: starting it says why)."""
        if self.ready is None:
            return False
        try:
            found = target()
            name = self.route(found) if found is not None else None
        except (RuntimeError, ValueError):
            return False
        if name is None or self.ready(name):
            return False
        self._held.append((name, kind, item))
        return True
