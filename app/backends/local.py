"""LocalBackend: the continuous-batching engine behind the Backend protocol (no behaviour of its own)."""

from __future__ import annotations

from collections.abc import Callable

from app.backends.base import BackendInfo
from app.engine import Engine, EngineConfig, GenerationRequest, RequestHandle, StatsSnapshot, StepEvent
from app.models import model_name


class LocalBackend:
    def __init__(self, config: EngineConfig):
        self.engine = Engine(config)  # raises a readable error for a bad model file
        info = self.engine.model_info
        self.name = f"local · {model_name(info.path)}"
        self.model_info = BackendInfo(kind="local", name=self.name, model=model_name(info.path),
                                      path=str(info.path), local=info)

    @property
    def failure(self) -> str | None:
        """Why the engine thread died, or None (Engine.failure); `submit()` then raises EngineStopped."""
        return self.engine.failure

    @property
    def config(self) -> EngineConfig:
        """The engine settings it was loaded with."""
        return self.engine.config

    @property
    def alive(self) -> bool:
        return self.engine.alive

    def submit(self, request: GenerationRequest) -> RequestHandle:
        return self.engine.submit(request)

    def render_prompt(self, request: GenerationRequest) -> str:
        """The exact text the request becomes before tokenization (Engine.render_prompt)."""
        return self.engine.render_prompt(request)

    def check_format(self, grammar: str | None, json_schema: dict | None) -> str | None:
        """None if the grammar or schema compiles for this model, else the parser's message (Engine.check_grammar)."""
        return self.engine.check_grammar(grammar, json_schema)

    def reset_stats(self) -> None:
        self.engine.reset_stats()

    def clear_prompt_cache(self) -> None:
        """Forget every cached prompt; applied between steps (wait_idle() returns once it is)."""
        self.engine.clear_prompt_cache()

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]:
        return self.engine.subscribe(fn)

    def stats(self) -> StatsSnapshot:
        return self.engine.stats()

    def cancel_all(self) -> None:
        self.engine.cancel_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self.engine.wait_idle(timeout)

    def close(self) -> bool:
        return self.engine.close()

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
