"""The scan cache: what each GGUF's header said, keyed by the file's real path, size and mtime.

A rescan where nothing changed reads no header (`reads` counts the headers actually parsed). The cache is one
JSON file in the user cache folder (platformdirs), written crash-safe (temp file, fsync, rename); a file that
cannot be read is moved aside as `*.bad`, never deleted, and the scan starts afresh. The last scan's entries are
kept too, so the Models dialog can show them before a rescan finishes.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import platformdirs

from app.files import write_atomic
from app.models.gguf_header import GGUFError, read_header
from app.models.info import ModelFacts, facts_from_headers

log = logging.getLogger("chorus.models")
FORMAT = "chorus-model-scan"
VERSION = 1


def default_cache_path() -> Path:
    return Path(platformdirs.user_cache_dir("chorus", appauthor=False)) / "model-scan.json"


class ScanCache:
    """Facts per file, or the reason it is broken. `path=None`: in memory only. Thread-safe."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.reads = 0  # headers parsed since this cache was made (a cache hit reads none)
        self._lock = threading.Lock()
        self._files: dict[str, dict] = {}
        self.last_entries: list[dict] = []
        if path is not None:
            self._load()

    @classmethod
    def default(cls) -> ScanCache:
        return cls(default_cache_path())

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("format") != FORMAT or data.get("version") != VERSION:
                raise ValueError("not a scan cache of this version")
            self._files = dict(data["files"])
            self.last_entries = list(data.get("entries", []))
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            aside = self.path.with_suffix(".bad")
            log.warning("model scan cache %s unreadable (%s): moved to %s", self.path, exc, aside)
            try:
                os.replace(self.path, aside)
            except OSError:
                pass
            self._files, self.last_entries = {}, []

    def facts(self, shard_paths: list[Path], filename: str = "") -> tuple[ModelFacts | None, str | None]:
        """(facts, None) for a readable model, (None, reason) for a broken one. Reads headers only for files
        whose size or mtime changed since they were cached."""
        keys = [_stamp(p) for p in shard_paths]
        cache_key = "|".join(k[0] for k in keys)
        stamp = [k[1] for k in keys]
        with self._lock:
            hit = self._files.get(cache_key)
        if hit is not None and hit.get("stamp") == stamp:
            return (ModelFacts.from_dict(hit["facts"]), None) if hit.get("facts") else (None, hit.get("broken"))
        facts, broken = self._read(shard_paths, filename)
        with self._lock:
            self._files[cache_key] = {"stamp": stamp, "facts": facts.to_dict() if facts else None, "broken": broken}
        return facts, broken

    def _read(self, shard_paths: list[Path], filename: str) -> tuple[ModelFacts | None, str | None]:
        headers = []
        for shard in shard_paths:
            with self._lock:
                self.reads += 1
            try:
                header = read_header(shard)
            except GGUFError as exc:
                return None, str(exc)
            except OSError as exc:
                return None, f"cannot read {shard.name}: {exc.strerror or exc}"
            size = shard.stat().st_size
            if size < header.expected_size:
                return None, (f"truncated: {shard.name} has {size:,} of the {header.expected_size:,} bytes its "
                              "tensor table needs (an interrupted download?)")
            headers.append(header)
        try:
            return facts_from_headers(headers, filename), None
        except GGUFError as exc:  # a metadata value of the wrong type
            return None, str(exc)

    def save(self, entries: list[dict] | None = None, keep: set[str] | None = None) -> None:
        """Persist (no-op in memory). `keep`: the cache keys still on disk (others are dropped)."""
        with self._lock:
            if entries is not None:
                self.last_entries = entries
            if keep is not None:
                self._files = {k: v for k, v in self._files.items() if k in keep}
            text = json.dumps({"format": FORMAT, "version": VERSION, "files": self._files,
                               "entries": self.last_entries})
        if self.path is not None:
            try:
                write_atomic(self.path, text)
            except OSError as exc:
                log.warning("could not save the model scan cache %s: %s", self.path, exc)

    def key(self, shard_paths: list[Path]) -> str:
        return "|".join(_stamp(p)[0] for p in shard_paths)


def _stamp(path: Path) -> tuple[str, list[int]]:
    """The cache key (real path) and stamp (size, mtime in ns) of a file."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return real, [st.st_size, st.st_mtime_ns]
