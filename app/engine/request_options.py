"""Per-request engine options beside sampling: speculative decoding (Speculation) and LoRA adapters
(LoraAdapter, lora_key). Part of the engine's public vocabulary (types.py re-exports them)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from app.engine import limits


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding for one request (docs/engine.md, "Speculative decoding"): lossless, the same tokens
    as without it. `mode`: off, on, or auto (on until its drafts stop paying, then off with a note); `kind`:
    how drafts are made ("ngram": looked up in the request's own prompt and output; "draft": by a small draft
    model sharing the vocabulary); `max_draft`: most drafted tokens verified in one step; `draft_model`: kind
    "draft"'s GGUF file (None: the engine's EngineConfig.draft_model)."""

    mode: str = "auto"
    kind: str = limits.SPEC_KIND_DEFAULT
    max_draft: int = limits.SPEC_MAX_DRAFT.default
    draft_model: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in limits.SPEC_MODES:
            raise ValueError(f"speculative mode must be one of {', '.join(limits.SPEC_MODES)}, got {self.mode!r}")
        if self.kind not in limits.SPEC_KINDS:
            raise ValueError(f"speculative kind must be one of {', '.join(limits.SPEC_KINDS)}, got {self.kind!r}")
        limits.SPEC_MAX_DRAFT.check("max_draft", self.max_draft)
        if self.draft_model is not None:
            path = self.draft_model
            if self.kind != "draft" or not isinstance(path, (str, Path)) or not str(path).strip():
                raise ValueError(f"draft_model is the GGUF file of speculative kind 'draft', got {path!r:.80} "
                                 f"with kind {self.kind!r}")
            object.__setattr__(self, "draft_model", os.path.abspath(os.path.expanduser(str(self.draft_model))))

    @property
    def enabled(self) -> bool:
        return self.mode != "off"


@dataclass(frozen=True)
class LoraAdapter:
    """One LoRA adapter applied to a request: a GGUF adapter file (convert_lora_to_gguf.py's output) and its
    scale, as llama-server's `--lora FILE` and per-request `lora: [{id, scale}]`. Scale 0 leaves it off."""

    path: str
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.path, (str, Path)) or not str(self.path).strip():
            raise ValueError(f"a LoRA adapter needs the path of its GGUF file, got {self.path!r:.80}")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)) or not math.isfinite(self.scale):
            raise ValueError(f"a LoRA adapter's scale must be a finite number, got {self.scale!r:.80}")
        object.__setattr__(self, "path", os.path.abspath(os.path.expanduser(str(self.path))))
        object.__setattr__(self, "scale", float(self.scale))


def lora_key(adapters) -> tuple[tuple[str, float], ...]:
    """The adapter set a request decodes with, as llama.cpp sees it (zero scales dropped, order irrelevant):
    requests with equal keys may share a llama_decode, with different keys never (docs/engine.md)."""
    return tuple(sorted((a.path, a.scale) for a in adapters if a.scale != 0.0)) if adapters else ()
