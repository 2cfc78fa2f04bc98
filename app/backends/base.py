"""What the session and the CLI need from anything that generates: the Backend protocol, and BackendInfo.

A backend takes GenerationRequests and gives back RequestHandles, publishes one StepEvent per step to its
subscribers and reports StatsSnapshots, so nothing above this layer knows whether tokens come from the local
engine or a server. `model_info` is a BackendInfo for every backend.

The protocol is the only way in: nothing above app/backends reaches a backend's engine. What differs between
backends is declared here, with what each kind does:
- `config`: the EngineConfig a local model runs with; None for a server (its settings are its own).
- `render_prompt(request)`: the exact text the model reads. A server renders it out of sight: it raises
  NotSupported, saying so.
- `check_format(grammar, json_schema)`: why a grammar or JSON schema cannot constrain this backend's output (a
  sentence), else None. A local model compiles it with its own parser; a server gets only the checks that need no
  model (an empty grammar, a schema the converter refuses) and reports the rest when a request runs.
- `reset_stats()`: start the figures `stats()` reports afresh (both kinds; a server's own /metrics are its own).
- `clear_prompt_cache()`: forget the prompts kept for reuse, so the next requests start cold (a benchmark's fresh
  start). A local model drops its slots' cached prompts between steps; a server keeps its cache out of the
  client's reach: it raises NotSupported, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from app.engine import EngineConfig, GenerationRequest, ModelInfo, RequestHandle, StatsSnapshot, StepEvent


class NotSupported(NotImplementedError):
    """A backend lacks a capability the protocol declares (e.g. a server renders prompts out of sight); the
    message says which and why, in words for the user."""


@dataclass(frozen=True)
class BackendInfo:
    """What a backend runs, the same shape for every kind. A snapshot: a server's `model` and `server_kind` are
    learnt when it is first asked for its models (`OpenAIBackend.connect`), so read `model_info` again then."""

    kind: Literal["local", "server"]
    name: str  # the backend's label (Backend.name)
    model: str | None  # local: the model's name (app.models.model_name: its file's); server: the model asked for
    path: str = ""  # local: the GGUF file
    url: str = ""  # server: its base URL (…/v1)
    server_kind: str | None = None  # server: `owned_by` of its models ("llamacpp", "vllm", …); None = not known
    local: ModelInfo | None = None  # local: everything the GGUF says (architecture, size, chat format…)


@runtime_checkable
class Backend(Protocol):
    name: str  # a short label for panes and reports
    model_info: BackendInfo  # what is loaded or served
    failure: str | None  # why it stopped taking requests on its own (a dead engine thread), else None

    @property
    def config(self) -> EngineConfig | None: ...  # a local model's engine settings; None for a server

    def submit(self, request: GenerationRequest) -> RequestHandle: ...

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]: ...

    def stats(self) -> StatsSnapshot: ...

    def cancel_all(self) -> None: ...

    def close(self) -> bool: ...  # whether it stopped within its own bound (it never blocks longer)

    def render_prompt(self, request: GenerationRequest) -> str: ...  # raises NotSupported (a server), PromptError

    def check_format(self, grammar: str | None, json_schema: dict | None) -> str | None: ...

    def reset_stats(self) -> None: ...

    def clear_prompt_cache(self) -> None: ...  # raises NotSupported (a server)
