"""The same model in other quantizations: among the models discovery found, the files of one model that differ only
by how their weights are stored ("SmolLM2-135M-Instruct.Q4_1" and "SmolLM2-135M-Instruct-Q8_0").

Two files are one model when their names are the same once the quantization is taken out (`base_name`) and
their headers agree on the architecture, the parameter count and the vocabulary size. A fine-tune of the same
base has the same shapes but another name, so it is not listed; a file whose header could not be read (broken)
is never listed. Qt-free.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from app.models.discover import ModelEntry, entry_of
from app.models.info import without_quant
from app.models.names import model_name

_SEPARATORS = re.compile(r"[\s._\-:]+")


def base_name(name: str) -> str:
    """A model's name without its quantization, lower-case, separators folded:
    "SmolLM2-135M-Instruct.Q4_1" and "smollm2-135m-instruct-q8_0" both give "smollm2 135m instruct"."""
    stem = model_name(name) if name.lower().endswith(".gguf") else name
    return _SEPARATORS.sub(" ", without_quant(stem)).strip().lower()


def _shape(entry: ModelEntry) -> tuple:
    vocab = entry.facts.n_vocab if entry.facts else 0
    return entry.architecture, entry.n_params, vocab


def same_model(path: str, entries: Iterable[ModelEntry]) -> list[ModelEntry]:
    """The entries that hold the model at `path` in another quantization (the file itself, and other apps'
    copies of one file, left out), smallest file first. `path`'s header is read when it is not among `entries`;
    a file that cannot be read has no other quantization."""
    entries = [e for e in entries if not e.broken]
    real = os.path.realpath(path)
    me = next((e for e in entries if os.path.realpath(e.path) == real), None) or entry_of(path)
    if me.broken or me.n_params <= 0:
        return []
    found: dict[str, ModelEntry] = {}
    for entry in entries:
        file = os.path.realpath(entry.path)
        if file == real or file in found:
            continue
        if _shape(entry) == _shape(me) and base_name(entry.name) == base_name(me.name):
            found[file] = entry
    return sorted(found.values(), key=lambda e: (e.size_bytes, e.name.lower()))
