"""The one GGUF writer (the benchmarks' and the tests' model files), reading with the product's one reader,
app.models.gguf_header.

- `copy_with_metadata`: a copy of a GGUF file with some metadata changed, rebuilt byte by byte: a new header and
  key/value section, then the tensor infos and the tensor data as they are (their offsets count from the data
  section, which starts at the next multiple of the file's `general.alignment`). The same bytes as the `gguf`
  package's `copy_with_new_metadata` gives for the same change (tests/cli/test_gguf_copy.py checks it), without
  reading every vocabulary entry into Python objects: ~0.2 s instead of ~3 s for the 100 MB test model, which
  the tests copy dozens of times (one file per chat template).
- `write_file`: a new file of F32 tensors (a LoRA adapter), the same bytes as the `gguf` package's GGUFWriter.

Little-endian GGUF v3 (what llama.cpp writes on every platform Chorus runs on); the values are typed with the
helpers below.
"""

from __future__ import annotations

import mmap
import shutil
import struct
from pathlib import Path

from app.models.gguf_header import read_header

ARCHITECTURE, ALIGNMENT = "general.architecture", "general.alignment"
_UINT32, _FLOAT32, _BOOL, _STRING, _ARRAY = 4, 6, 7, 8, 9
_F32 = 0  # ggml_type


def _text(value: str) -> bytes:
    data = value.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def string(value: str) -> bytes:
    """A typed STRING value."""
    return struct.pack("<I", _STRING) + _text(value)


def uint32(value: int) -> bytes:
    """A typed UINT32 value."""
    return struct.pack("<II", _UINT32, value)


def float32(value: float) -> bytes:
    """A typed FLOAT32 value."""
    return struct.pack("<If", _FLOAT32, value)


def boolean(value: bool) -> bytes:
    """A typed BOOL value."""
    return struct.pack("<IB", _BOOL, bool(value))


def strings(values: list[str]) -> bytes:
    """A typed ARRAY of STRING value."""
    return struct.pack("<IIQ", _ARRAY, _STRING, len(values)) + b"".join(_text(v) for v in values)


def _head(n_tensors: int, entries: list[bytes]) -> bytes:
    return struct.pack("<4sIQQ", b"GGUF", 3, n_tensors, len(entries)) + b"".join(entries)


def copy_with_metadata(source: Path, target: Path, changes: dict[str, bytes | None],
                       append: dict[str, bytes] | None = None, drop_prefix: str | None = None) -> Path:
    """Copy `source` to `target`: each key in `changes` gets its typed value where it stands (appended at the end
    when absent) or, for None, is removed; keys starting with `drop_prefix` are removed; `append` entries go
    after the kept ones. The architecture comes first, as the `gguf` writer puts it."""
    header = read_header(source)
    alignment = header.get(ALIGNMENT, 32)
    with open(source, "rb") as src, mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        entries = [(key, bytes(buf[start:end])) for key, (start, end) in header.spans.items()]
        infos = bytes(buf[slice(*header.tensor_table)])
    entries.sort(key=lambda entry: entry[0] != ARCHITECTURE)  # stable: the rest keep their order
    pending = dict(changes)
    kept = []
    for key, raw in entries:
        if drop_prefix and key.startswith(drop_prefix):
            continue
        if key in pending:
            value = pending.pop(key)
            if value is not None:
                kept.append(_text(key) + value)
            continue
        kept.append(raw)
    kept += [_text(k) + v for k, v in (append or {}).items()]
    kept += [_text(k) + v for k, v in pending.items() if v is not None]
    head = _head(len(header.tensors), kept) + infos
    with open(target, "wb") as out, open(source, "rb") as src:
        out.write(head + b"\0" * (-len(head) % alignment))
        src.seek(header.data_offset)
        shutil.copyfileobj(src, out, 16 << 20)
    return Path(target)


def write_file(target: Path, metadata: dict[str, bytes], tensors: dict, alignment: int = 32) -> Path:
    """A new GGUF file: `metadata` (key -> typed value, the architecture first) and `tensors` (name -> a float32
    numpy array, written F32; GGUF's dimensions are the array's shape reversed), each tensor's data at a multiple
    of `alignment`."""
    import numpy as np

    arrays = {name: np.ascontiguousarray(array, dtype=np.float32) for name, array in tensors.items()}
    infos, offset = [], 0
    for name, array in arrays.items():
        dims = array.shape[::-1]
        infos.append(_text(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, _F32, offset))
        offset += -(-array.nbytes // alignment) * alignment
    head = _head(len(arrays), [_text(k) + v for k, v in metadata.items()]) + b"".join(infos)
    with open(target, "wb") as out:
        out.write(head + b"\0" * (-len(head) % alignment))
        for array in arrays.values():
            out.write(array.tobytes() + b"\0" * (-array.nbytes % alignment))
    return Path(target)
