"""Real image files for tests: tiny PNGs written with zlib (no imaging library needed)."""

import struct
import zlib
from pathlib import Path


def png(width: int = 4, height: int = 3, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid RGB PNG of one colour."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def write_png(path: Path, **kwargs) -> Path:
    path.write_bytes(png(**kwargs))
    return path
