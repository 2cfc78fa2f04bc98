"""A pane's LoRA adapters as people write them: the JSON of a `run` line and the one-line text of the pane's field.

JSON, as llama-server's per-request field: `lora: [{"id": 0, "scale": 0.5}, {"path": "b.gguf", "scale": 1}]`, an
`id` naming one of the adapters loaded at the start (`run --lora FILE`, repeatable, as `llama-server --lora`),
adapters not listed at scale 0; without `lora` every loaded adapter applies at scale 1, as on llama-server.
Text, in a pane: `a.gguf@0.5; b.gguf` (`;` between adapters, `@scale` optional, 1 by default).
"""

from __future__ import annotations

import math

from app.engine import LoraAdapter

SEPARATOR = ";"


def lora_from_json(value, loaded: tuple[str, ...] = ()) -> tuple[LoraAdapter, ...]:
    """A request's `lora` (None: every adapter in `loaded` at scale 1); raises ValueError naming the entry."""
    if value is None:
        return tuple(LoraAdapter(path, 1.0) for path in loaded)
    if not isinstance(value, list):
        raise ValueError('lora must be a list of {"id" or "path", "scale"} objects')
    adapters = []
    for index, entry in enumerate(value):
        where = f"lora[{index}]"
        if not isinstance(entry, dict) or set(entry) - {"id", "path", "scale"} or ("id" in entry) == ("path" in entry):
            raise ValueError(f'{where} must be {{"id": N, "scale": S}} or {{"path": FILE, "scale": S}}')
        scale = entry.get("scale", 1.0)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
            raise ValueError(f"{where}.scale must be a number, got {scale!r:.40}")
        if "id" in entry:
            ident = entry["id"]
            if isinstance(ident, bool) or not isinstance(ident, int) or not 0 <= ident < len(loaded):
                given = f"{len(loaded)} loaded with --lora" if loaded else "none loaded: give --lora FILE"
                raise ValueError(f"{where}.id {ident!r:.40} names no adapter ({given})")
            adapters.append(LoraAdapter(loaded[ident], float(scale)))
        elif not isinstance(entry["path"], str) or not entry["path"].strip():
            raise ValueError(f"{where}.path must be the adapter's GGUF file")
        else:
            adapters.append(LoraAdapter(entry["path"], float(scale)))
    return tuple(adapters)


def parse_text(text: str) -> tuple[LoraAdapter, ...]:
    """`a.gguf@0.5; b.gguf` as adapters; raises ValueError naming the part that is not one."""
    adapters = []
    for part in (p.strip() for p in text.split(SEPARATOR)):
        if not part:
            continue
        path, at, scale = part.rpartition("@")
        if not at:
            path, scale = part, "1"
        try:
            value = float(scale)
        except ValueError:
            raise ValueError(f"adapter {part!r}: the scale after @ must be a number") from None
        adapters.append(LoraAdapter(path.strip(), value))
    return tuple(adapters)


def to_text(adapters: tuple[LoraAdapter, ...]) -> str:
    """The pane's adapters in the text `parse_text` reads."""
    return f"{SEPARATOR} ".join(a.path if a.scale == 1.0 else f"{a.path}@{a.scale:g}" for a in adapters)
