"""Real GGUF variant files for tests, written with the `gguf` package (its own metadata copier)."""

from __future__ import annotations

from pathlib import Path

import gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

CHAT_TEMPLATE = gguf.Keys.Tokenizer.CHAT_TEMPLATE


def write_variant(source: Path, target: Path, chat_template: str | None, uint32: dict | None = None) -> Path:
    """Copy `source` to `target` with the chat template replaced (a string) or removed (None), and any
    integer keys in `uint32` set (e.g. the EOS token id)."""
    reader = gguf.GGUFReader(source, "r")
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(target, arch=arch, endianess=reader.endianess)
    alignment = reader.fields.get(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    new = {} if chat_template is None else {CHAT_TEMPLATE: MetadataDetails(gguf.GGUFValueType.STRING,
                                                                           chat_template)}
    new.update({key: MetadataDetails(gguf.GGUFValueType.UINT32, value) for key, value in (uint32 or {}).items()})
    copy_with_new_metadata(reader, writer, new, remove_metadata=[] if chat_template else [CHAT_TEMPLATE])
    return target
