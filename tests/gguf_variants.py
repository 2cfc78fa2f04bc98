"""Real GGUF variant files for tests, written with the `gguf` package (its own metadata copier): the writer lives in
app/bench/model_files.py, which the benchmarks share."""

from pathlib import Path

from app.bench.model_files import write_variant

__all__ = ["write_variant", "write_vocab_variant"]


def write_vocab_variant(source: Path, target: Path, swap: tuple[int, int] = (1000, 1001)) -> Path:
    """Copy `source` with the text of two tokens swapped: a model whose vocabulary differs from the source's
    (same size, same weights), as a draft model of another tokenizer would."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = gguf.GGUFReader(source, "r")
    key = gguf.Keys.Tokenizer.LIST
    tokens = list(reader.fields[key].contents())
    a, b = swap
    tokens[a], tokens[b] = tokens[b], tokens[a]
    writer = gguf.GGUFWriter(target, arch=reader.fields[gguf.Keys.General.ARCHITECTURE].contents(),
                             endianess=reader.endianess)
    alignment = reader.fields.get(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    new = {key: MetadataDetails(gguf.GGUFValueType.ARRAY, tokens, sub_type=gguf.GGUFValueType.STRING)}
    copy_with_new_metadata(reader, writer, new, remove_metadata=[])
    return target
