"""The arena on local models that wait on standby: each pair's models are loaded before it generates, as Run all
loads a pane's, and unloaded when a later pair no longer needs them or the arena closes.

A pair generates both sides at once (they stream in lockstep), so its models must fit in memory together beside
what is loaded; app.backends.shifts decides (a pair is one shift: its models load with the shifts' `load`), and
a pair that cannot fit is refused with a sentence that says why and nothing is loaded for it. Only models this
object loaded are ever unloaded by it. Runs on an asyncio loop (the window's qasync loop); loads and unloads on
worker threads. Qt-free.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from app.backends.registry import BackendRegistry
from app.backends.shifts import BackendJob, load, plan_for, unload


class PairLoads:
    def __init__(self, registry: BackendRegistry):
        self.registry = registry
        self.loaded: list[str] = []  # the models this loaded and has not unloaded yet
        self._lock = asyncio.Lock()

    def needed(self, backends: Sequence[str]) -> bool:
        """Whether any of these backends is a model on standby (the pair must wait for `ensure`)."""
        return any(self.registry.on_standby(name) for name in backends)

    async def ensure(self, backends: Sequence[str]) -> str | None:
        """Load the pair's models that are on standby, first unloading those an earlier pair loaded and this one
        does not use. None when every one is loaded; else why the pair cannot run (nothing loaded for it)."""
        async with self._lock:
            wanted = list(dict.fromkeys(backends))
            for name in [n for n in self.loaded if n not in wanted]:
                await self._unload(name)
            plan = plan_for([BackendJob(name) for name in wanted], self.registry)
            if plan.refused:
                return plan.refused[0][1]
            if plan.in_shifts:
                names = " and ".join(plan.labels.get(name, name) for name in wanted)
                return (f"{names} do not fit in memory together, and a pair generates both sides at once: "
                        "compare them in panes (Run all runs them in shifts)")
            for shift in plan.shifts:
                for name in shift.load:
                    why = await load(self.registry, name, plan.labels.get(name, name))
                    if why is not None:
                        return why
                    self.loaded.append(name)
            return None

    async def release(self) -> None:
        """Unload every model this loaded (the arena closed): they wait on standby again."""
        async with self._lock:
            for name in list(self.loaded):
                await self._unload(name)

    async def _unload(self, name: str) -> None:
        self.loaded.remove(name)
        if self.registry.get(name) is not None and not self.registry.closed:
            await unload(self.registry, name)


__all__ = ["PairLoads"]
