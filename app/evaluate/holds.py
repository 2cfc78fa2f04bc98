"""What an evaluation holds back for a model on standby: cells and judge calls whose backend is not ready yet.

`Holds(route)` is the EvaluationRunner's list of held items, each with the backend it waits for. `hold` keeps an
item when its backend can be named (`route` of its target) and `ready` says it does not take requests now;
`take` hands held items back (all, or those of one backend) for the runner to queue again (`release`) or to end
with the reason its model could not be loaded (`fail_held`). Qt-free.
"""

from __future__ import annotations

from collections.abc import Callable

from app.session.evaluation import BackendTarget

Held = tuple[str, str, tuple]  # (backend, "cell" | "judge", the runner's queue item)


class Holds:
    def __init__(self, route: Callable[[BackendTarget], str]):
        self.route = route
        self._items: list[Held] = []

    def __bool__(self) -> bool:
        return bool(self._items)

    def backends(self) -> set[str]:
        """The backends that held items wait for."""
        return {name for name, _kind, _item in self._items}

    def hold(self, ready: Callable[[str], bool] | None, kind: str, item: tuple,
             target: Callable[[], BackendTarget | None]) -> bool:
        """Hold the item when its backend is not `ready` (a model on standby); False: go on with it now (also when
        there is no `ready`, or its backend cannot be named: starting it says why)."""
        if ready is None:
            return False
        try:
            found = target()
            name = self.route(found) if found is not None else None
        except (RuntimeError, ValueError):
            return False
        if name is None or ready(name):
            return False
        self._items.append((name, kind, item))
        return True

    def take(self, name: str | None = None) -> list[Held]:
        """Remove and return the items held for `name` (None: for any backend), in the order they were held."""
        taken = [entry for entry in self._items if name is None or entry[0] == name]
        self._items = [entry for entry in self._items if entry not in taken]
        return taken
