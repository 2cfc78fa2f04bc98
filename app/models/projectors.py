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

Whether a model takes images at all is read from its own GGUF (`takes_images`): the text part of a vision-language
model has a vision architecture, or a chat template that writes image placeholders. *Open model…* asks for a
projector only then: a text model is never asked.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.models.gguf_header import GGUFError, read_header

OLLAMA_PROJECTOR_LAYER = "application/vnd.ollama.image.projector"
# llama.cpp's text architectures that exist only as the language half of a vision model (src/llama-arch.cpp)
VISION_ARCHS = frozenset({"qwen2vl", "qwen3vl", "qwen3vlmoe", "mllama", "llama4", "gemma3n", "glm4v", "glm4v_moe"})
# what chat templates write where an image goes: Qwen-VL / Qwen3.5, Gemma 3, Gemma 4, Mistral / Pixtral,
# Llama 4 / Llama 3.2 Vision, LLaVA-style, InternVL / MiniCPM-V, llama.cpp's own media marker
IMAGE_MARKERS = ("<|vision_start|>", "<start_of_image>", "<|image>", "[IMG]", "<|image|>", "<image>", "<img>",
                 "<__media__>")


def takes_images(model: str | Path) -> bool:
    """Whether the model's GGUF says it reads images (a vision architecture, or image placeholders in its chat
    template); False for a text model, and for a file whose header cannot be read."""
    try:
        header = read_header(model)
    except (OSError, GGUFError):
        return False
    template = header.get("tokenizer.chat_template")
    return header.get("general.architecture") in VISION_ARCHS or \
        (isinstance(template, str) and any(marker in template for marker in IMAGE_MARKERS))


def projector_hears(projector: str | Path) -> bool:
    """Whether a projector GGUF has an audio encoder (`clip.has_audio_encoder`: Ultravox, Qwen2-Audio, Voxtral,
    Gemma 3n/4 audio, Granite speech...); False for a vision-only one, and for a file whose header cannot be read."""
    try:
        return bool(read_header(projector).get("clip.has_audio_encoder"))
    except (OSError, GGUFError):
        return False


def projector_sees(projector: str | Path) -> bool:
    """Whether a projector GGUF has a vision encoder (`clip.has_vision_encoder`; an older file without the key is
    taken as vision, as libmtmd takes it); False for an audio-only one, and for a file whose header cannot be read."""
    try:
        header = read_header(projector)
    except (OSError, GGUFError):
        return False
    return bool(header.get("clip.has_vision_encoder", not header.get("clip.has_audio_encoder")))


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
