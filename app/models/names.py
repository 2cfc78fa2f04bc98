"""The one name the window gives a model: its file's name without `.gguf` (and, for a split model, without the
`-00001-of-00003` of its first shard), e.g. "SmolLM2-135M-Instruct.Q4_1".

That is the name a user chose, downloaded or sees in a file browser, and it tells two quantizations of one
model apart. The GGUF's own `general.name` ("Smollm2 135M 8k Lc100K Mix1 Ep2") is often a training-run name
that says neither; it is shown only as detail (a tooltip). Every place that names a local model — the status
bar, a pane's warnings, the backends, evaluations, the arena, the Models dialog — calls `model_name`.
"""

from __future__ import annotations

from pathlib import Path

from app.models.shards import split_parts


def model_name(path: str | Path) -> str:
    """The model at `path`, as the window names it ("" for no path)."""
    name = Path(str(path)).name if path else ""
    parts = split_parts(name)
    if parts:
        return parts[0]
    return name[:-5] if name.lower().endswith(".gguf") else name
