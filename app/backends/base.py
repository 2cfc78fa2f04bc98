"""What the session and the CLI need from anything that generates: the Backend protocol.

A backend takes GenerationRequests and gives back RequestHandles, publishes one StepEvent per step to its
subscribers and reports StatsSnapshots, so nothing above this layer knows whether tokens come from the local
engine or a server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from app.engine import GenerationRequest, RequestHandle, StatsSnapshot, StepEvent


@runtime_checkable
class Backend(Protocol):
    name: str  # a short label for panes and reports
    model_info: object  # what is loaded or served (ModelInfo for the local engine)

    def submit(self, request: GenerationRequest) -> RequestHandle: ...

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]: ...

    def stats(self) -> StatsSnapshot: ...

    def cancel_all(self) -> None: ...

    def close(self) -> None: ...
