"""Read a GGUF file's header — metadata and tensor table — without touching the weights.

The file is memory-mapped and parsed with struct at offsets, so only the header's pages are read (a 7B model's
header is a few MB, mostly the vocabulary). Layout per ggml's docs/gguf.md: magic "GGUF", version (2 or 3),
tensor count, metadata count, the key/value pairs, the tensor infos (name, dims, ggml type, offset), then the
data section at the next multiple of `general.alignment` (32 by default). Sizes of ggml types are ggml's own
(ggml/src/ggml-common.h); a file shorter than its tensor table says is reported as truncated. Anything that
is not a regular file (a FIFO, a device) is refused before it is opened, so a scan never blocks on one. This
is the only GGUF reader: the engine's pre-load check (`app.models.default.validate_gguf`) uses it too, and so
does the one writer (app/bench/gguf_write.py), which copies a file's entries by the byte ranges recorded here.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"GGUF"
# ggml_type -> (elements per block, bytes per block), from ggml-common.h's block structs.
GGML_TYPES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110), 22: (256, 82),
    23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2),
    34: (256, 54), 35: (256, 66), 39: (32, 17), 40: (64, 36), 41: (128, 18), 42: (64, 18),
}
# llama_ftype (general.file_type) -> the name llama.cpp and quantizers use (include/llama.h).
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
    37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}
# GGUF value types: struct format of the scalars; 8 = string, 9 = array.
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_KEEP_ARRAY = 65536  # numeric arrays up to this length are kept (per-layer head counts); longer ones only counted
_KEEP_STRING = 1 << 20  # strings longer than this (none in practice) are skipped


class GGUFError(ValueError):
    """The file is not a readable GGUF: the message says why, in words a user can act on."""


@dataclass
class TensorInfo:
    name: str
    n_elements: int
    ggml_type: int
    offset: int  # from the start of the data section
    nbytes: int
    dims: tuple[int, ...] = ()  # GGUF order (ne: the innermost first)


@dataclass
class GGUFHeader:
    """Everything the header says: `meta` (scalars, short numeric arrays, and `<key>#len` for every array's
    length) and the tensor table. `data_offset` is where the weights start; `expected_size` the file size the
    tensor table needs. `spans` gives each key's whole entry (key, type, value) as a byte range of the file, in
    file order, and `tensor_table` the tensor infos' range: what a writer copies as it is."""

    version: int
    meta: dict = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)
    data_offset: int = 0
    expected_size: int = 0
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    tensor_table: tuple[int, int] = (0, 0)

    def get(self, key: str, default=None):
        return self.meta.get(key, default)


def describe(value) -> str:
    """A metadata value's GGUF kind, as a message names it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    return "an array"  # a kept numeric array, or None for an array that was only counted


class _Cursor:
    def __init__(self, buf, size: int, string_arrays: bool = False):
        self.buf, self.size, self.pos, self.string_arrays = buf, size, 0, string_arrays

    def take(self, fmt: str):
        width = struct.calcsize("<" + fmt)
        if self.pos + width > self.size:
            raise GGUFError(f"the header is cut off at byte {self.size} (the file is truncated)")
        value = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += width
        return value[0] if len(value) == 1 else value

    def string(self, keep: bool = True) -> str | None:
        n = self.take("Q")
        if self.pos + n > self.size:
            raise GGUFError(f"the header is cut off at byte {self.size} (the file is truncated)")
        start, self.pos = self.pos, self.pos + n
        return bytes(self.buf[start:self.pos]).decode("utf-8", "replace") if keep and n <= _KEEP_STRING else None

    def value(self, vtype: int, key: str, meta: dict):
        if vtype in _SCALARS:
            return self.take(_SCALARS[vtype])
        if vtype == 8:
            return self.string()
        if vtype != 9:
            raise GGUFError(f"metadata key {key!r} has an unknown value type {vtype} (a corrupt header)")
        etype, count = self.take("I"), self.take("Q")
        meta[key + "#len"] = count
        if etype in _SCALARS:
            width = struct.calcsize("<" + _SCALARS[etype])
            if count > _KEEP_ARRAY:
                if self.pos + width * count > self.size:
                    raise GGUFError(f"the header is cut off at byte {self.size} (the file is truncated)")
                self.pos += width * count
                return None
            return [self.take(_SCALARS[etype]) for _ in range(count)]
        if etype == 8:
            strings = [self.string(keep=self.string_arrays) for _ in range(count)]
            return strings if self.string_arrays else None
        raise GGUFError(f"metadata key {key!r} is an array of unsupported type {etype} (a corrupt header)")


def read_header(path: str | Path, string_arrays: bool = False) -> GGUFHeader:
    """Parse one GGUF file's header. Raises GGUFError (truncated, not GGUF, unsupported) or OSError. Arrays of
    strings (the vocabulary) are only counted, unless `string_arrays`: then they are kept too (seconds for a
    large vocabulary)."""
    path = Path(path)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else "a device or socket"
        raise GGUFError(f"not a regular file ({kind}): it is skipped without being opened")
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 24:  # a file that does not even start like one is named as such first
            if f.read(4) != MAGIC[:size]:
                raise GGUFError("not a GGUF model (it does not start with the GGUF signature)")
            raise GGUFError(f"only {size} bytes: too short to be a GGUF model (an interrupted download?)")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(_Cursor(buf, size, string_arrays))


def _parse(cur: _Cursor) -> GGUFHeader:
    if bytes(cur.buf[:4]) != MAGIC:
        raise GGUFError("not a GGUF model (it does not start with the GGUF signature)")
    cur.pos = 4
    version = cur.take("I")
    if version not in (2, 3):
        hint = " (a big-endian file?)" if version > 0xFFFF else ""
        raise GGUFError(f"unsupported GGUF version {version}{hint}")
    n_tensors, n_kv = cur.take("Q"), cur.take("Q")
    if n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise GGUFError(f"corrupt header ({n_tensors} tensors, {n_kv} metadata keys)")
    header = GGUFHeader(version)
    for _ in range(n_kv):
        start = cur.pos
        key = cur.string()
        header.meta[key] = cur.value(cur.take("I"), key, header.meta)
        header.spans[key] = (start, cur.pos)
    raw = []
    start = cur.pos
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.take("I")
        if n_dims > 8:
            raise GGUFError(f"tensor {name!r} has {n_dims} dimensions (a corrupt header)")
        dims = tuple(cur.take("Q") for _ in range(n_dims))
        n = 1
        for d in dims:
            n *= d
        raw.append((name, n, cur.take("I"), cur.take("Q"), dims))
    header.tensor_table = (start, cur.pos)
    alignment = header.meta.get("general.alignment", 32)
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        shown = alignment if isinstance(alignment, int) and not isinstance(alignment, bool) else describe(alignment)
        raise GGUFError(f"metadata key 'general.alignment' is {shown}, not a power of two "
                        "(a corrupt header)")
    header.data_offset = (cur.pos + alignment - 1) // alignment * alignment
    end = header.data_offset
    for name, n, ggml_type, offset, dims in raw:
        if ggml_type not in GGML_TYPES:
            raise GGUFError(f"tensor {name!r} has ggml type {ggml_type}, unknown to this llama.cpp build")
        block, block_bytes = GGML_TYPES[ggml_type]
        nbytes = n // block * block_bytes
        header.tensors.append(TensorInfo(name, n, ggml_type, offset, nbytes, dims))
        end = max(end, header.data_offset + offset + nbytes)
    header.expected_size = end
    return header
