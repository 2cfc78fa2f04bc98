"""Vision projectors (`mmproj` GGUFs) and the model each belongs to.

A projector is a GGUF whose file name contains "mmproj", as every publisher names them (llama.cpp's
convert_hf_to_gguf.py `--mmproj` writes `mmproj-<model>.gguf`; LM Studio, the hub and llama.cpp's `-hf` pick them
by that word). The apps keep one beside its model:
- LM Studio and the Hugging Face hub: in the model's folder (a repo's snapshot), e.g.
  `lmstudio-community/gemma-3-4b-it-GGUF/{gemma-3-4b-it-Q4_K_M.gguf, mmproj-model-f16.gguf}`;
- llama.cpp's flat cache: `<owner>_<repo>_<file>` files, so a projector and its model share the prefix before
  "mmproj" (`ggml-org_gemma-3-4b-it-GGUF_mmproj-model-f16.gguf`);
- Ollama: a manifest layer of type `application/vnd.ollama.image.projector` (read in discover.py);
- Jan: `mmproj_path` in the model's model.yml (read in discover.py).
When a folder holds several, the one whose prefix before "mmproj" starts the model's name wins, then an f16
one (the precision publishers recommend), then the first by name.
"""

from __future__ import annotations

import os
from pathlib import Path

OLLAMA_PROJECTOR_LAYER = "application/vnd.ollama.image.projector"


def is_projector(name: str) -> bool:
    lower = name.lower()
    return "mmproj" in lower and lower.endswith(".gguf")


def pick(model: Path, projectors: list[Path]) -> Path | None:
    """The projector among `projectors` that belongs to `model` (None: none does). A projector in another
    folder than the model's counts only when no folder-mate exists (a repo with its files in subfolders)."""
    if not projectors:
        return None
    near = [p for p in projectors if p.parent == model.parent] or projectors
    model_name = model.name.lower()

    def prefix(path: Path) -> str:
        return path.name.lower().split("mmproj", 1)[0]

    fitting = [p for p in near if model_name.startswith(prefix(p))]  # "" starts every name
    ranked = sorted(fitting, key=lambda p: (not prefix(p), "f16" not in p.name.lower(), p.name))
    return ranked[0] if ranked else None


def beside(model: str | Path) -> Path | None:
    """The projector in the model file's own folder (what *Open model…* looks for), or None."""
    model = Path(model)
    try:
        names = sorted(os.listdir(model.parent))
    except OSError:
        return None
    found = [model.parent / n for n in names if is_projector(n) and (model.parent / n).is_file()]
    return pick(model, found)
