"""Real GGUF variant files for tests, written with the `gguf` package (its own metadata copier): the writer lives in
app/bench/model_files.py, which the benchmarks share."""

from app.bench.model_files import write_variant

__all__ = ["write_variant"]
