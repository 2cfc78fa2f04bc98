"""Real GGUF variant files for tests: the writers live in app/bench (model_files.py, gguf_copy.py: the same bytes
as the `gguf` package's metadata copier), which the benchmarks share."""

from pathlib import Path

from app.bench import gguf_copy
from app.bench.model_files import write_variant

__all__ = ["write_variant", "write_vocab_variant"]


def write_vocab_variant(source: Path, target: Path, swap: tuple[int, int] = (1000, 1001)) -> Path:
    """Copy `source` with the text of two tokens swapped: a model whose vocabulary differs from the source's
    (same size, same weights), as a draft model of another tokenizer would."""
    key = "tokenizer.ggml.tokens"
    tokens = gguf_copy.read_metadata(source, key)
    a, b = swap
    tokens[a], tokens[b] = tokens[b], tokens[a]
    return gguf_copy.copy_with_metadata(source, target, {key: gguf_copy.strings(tokens)})
