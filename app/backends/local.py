"""LocalBackend: the continuous-batching engine behind the Backend protocol (no behaviour of its own)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.engine import Engine, EngineConfig, GenerationRequest, RequestHandle, StatsSnapshot, StepEvent


class LocalBackend:
    def __init__(self, config: EngineConfig):
        self.engine = Engine(config)  # raises a readable error for a bad model file
        self.model_info = self.engine.model_info
        self.name = f"local · {Path(self.model_info.path).stem}"

    def submit(self, request: GenerationRequest) -> RequestHandle:
        return self.engine.submit(request)

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]:
        return self.engine.subscribe(fn)

    def stats(self) -> StatsSnapshot:
        return self.engine.stats()

    def cancel_all(self) -> None:
        self.engine.cancel_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self.engine.wait_idle(timeout)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
