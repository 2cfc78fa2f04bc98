"""Chorus's continuous-batching engine. Qt-free: the UI subscribes to it through app.ui's bridge."""

from app.engine import limits
from app.engine.chat.template import builtin as chat_format
from app.engine.engine import Engine
from app.engine.native import ModelInfo
from app.engine.request import RequestHandle, next_request_id
from app.engine.request_options import LoraAdapter, Speculation
from app.engine.sampling_params import SAMPLER_FIELDS, SamplingParams
from app.engine.types import (
    Completion,
    EngineConfig,
    EngineStopped,
    GenerationRequest,
    RequestState,
    StatsSnapshot,
    StepEvent,
    default_threads,
    final_state,
)

__all__ = [
    "SAMPLER_FIELDS",
    "chat_format",
    "limits",
    "Completion",
    "Engine",
    "EngineConfig",
    "EngineStopped",
    "GenerationRequest",
    "LoraAdapter",
    "ModelInfo",
    "RequestHandle",
    "RequestState",
    "SamplingParams",
    "Speculation",
    "StatsSnapshot",
    "StepEvent",
    "default_threads",
    "final_state",
    "next_request_id",
]
