"""Find the GGUF models other apps already downloaded, each once per app. Read-only: nothing is ever written
into another app's folder (the only file written is Chorus' own scan cache).

Layouts and where each app keeps them: app/models/sources.py. Rules:
- partial downloads (`incomplete*`, `*.downloadInProgress`) are skipped; a vision projector (`mmproj*`, Ollama's
  projector layer, Jan's `mmproj_path`) is not a model but the `mmproj` of the model it belongs to
  (app/models/projectors.py), and that model's row says "vision";
- split shards (`-00001-of-00003.gguf`) are one model, loaded through the first shard;
- within one app a file is listed once: a hub snapshot symlink and its blob, or two Ollama tags naming one
  blob (the tags become aliases). The same file reached from two apps is one entry per app, each noting the
  other (`same_file_as`);
- a file that cannot be read, is truncated, misses shards, holds metadata of the wrong type or is not a regular
  file (a FIFO is never opened) is listed with the reason (`broken`), never raised: one odd file never empties
  the list.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import yaml

from app.models import projectors
from app.models.info import ModelFacts
from app.models.names import model_name
from app.models.scan_cache import ScanCache
from app.models.shards import group, missing_note, shard_paths, split_parts
from app.models.sources import SOURCE_LABELS, Root, roots

log = logging.getLogger("chorus.models")
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
MAX_DEPTH = 6


@dataclass(frozen=True)
class ModelEntry:
    """One model as an app keeps it. `path` is what to load (the first shard of a split model)."""

    path: str
    name: str
    source: str  # lmstudio | ollama | gpt4all | huggingface | llama.cpp | jan | folder
    size_bytes: int
    architecture: str = "?"
    quantization: str = "?"
    n_params: int = 0
    n_ctx_train: int = 0
    has_chat_template: bool = False
    shards: int = 1
    repo: str = ""  # publisher/model (LM Studio), the hub repo id, Jan's model id
    aliases: tuple[str, ...] = ()  # other names of the same file in this app (Ollama tags)
    same_file_as: tuple[str, ...] = ()  # other apps listing the very same file
    broken: str | None = None  # why it cannot load; None when it looks usable
    real_path: str = ""
    facts: ModelFacts | None = field(default=None, compare=False, repr=False)
    mmproj: str = ""  # the vision projector paired with the model ("" = none: a text-only model)

    @property
    def vision(self) -> bool:
        return bool(self.mmproj)

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)

    @property
    def thinking(self) -> bool:
        return bool(self.facts and self.facts.thinking)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["facts"] = self.facts.to_dict() if self.facts else None
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ModelEntry:
        """Raises (KeyError, TypeError, ValueError) for data that is not an entry; unknown keys are ignored."""
        names = {f.name for f in fields(cls)} - {"facts"}
        known = {k: v for k, v in data.items() if k in names}
        known["aliases"], known["same_file_as"] = tuple(known.get("aliases", ())), tuple(known.get("same_file_as", ()))
        facts = data.get("facts")
        return cls(**known, facts=ModelFacts.from_dict(facts) if isinstance(facts, dict) else None)


@dataclass
class _Candidate:
    source: str
    name: str
    shards: list[Path]
    expected: int = 1
    repo: str = ""
    aliases: list[str] = field(default_factory=list)
    mmproj: Path | None = None


def discover(home: str | Path | None = None, env: dict | None = None, *, folders=(), cache: ScanCache | None = None,
             progress: Callable[[int, int, str], None] | None = None, platform: str = sys.platform,
             own=()) -> list[ModelEntry]:
    """Every model the apps on this machine downloaded (and those in `folders`), sorted by source then name.
    `home`/`env` default to the real ones; `cache` to the persistent scan cache; `progress(done, total, name)`
    is called as headers are read. `own`: model files Chorus itself has (the embedded default, the model
    loaded now), listed first as source "chorus" unless an app's folder lists the same file."""
    home = Path(home) if home is not None else Path.home()
    env = dict(os.environ if env is None else env)
    cache = cache if cache is not None else ScanCache.default()
    candidates = []
    for root in roots(home, env, platform, folders):
        try:
            candidates += _dedupe(_COLLECT[root.kind](root))
        except OSError as exc:  # an unreadable folder loses its own models, never the scan
            log.warning("could not scan %s (%s): %s", root.path, root.source, exc)
    listed = {os.path.realpath(c.shards[0]) for c in candidates if c.shards}
    for path in dict.fromkeys(Path(p) for p in own if p):
        shards = shard_paths(path)
        if shards and path.exists() and os.path.realpath(shards[0]) not in listed:
            listed.add(os.path.realpath(shards[0]))
            parts = split_parts(shards[0].name)
            candidates.append(_Candidate("chorus", _stem(shards[0]), shards, parts[2] if parts else 1))
    entries = []
    for done, cand in enumerate(candidates):
        if progress:
            progress(done, len(candidates), cand.name)
        entries.append(_entry(cand, cache))
    if progress:
        progress(len(candidates), len(candidates), "")
    entries = _note_same_files(entries)
    entries.sort(key=lambda e: (list(SOURCE_LABELS).index(e.source), e.name.lower()))
    cache.save([e.to_dict() for e in entries], keep={cache.key(_shards_of(e)) for e in entries if _exists(e)})
    return entries


def entry_of(path: str | Path, cache: ScanCache | None = None) -> ModelEntry:
    """One model file read as discovery reads a file of Chorus's own (source "chorus"); `broken` says why when it
    cannot be read."""
    shards = shard_paths(Path(path)) or [Path(path)]
    parts = split_parts(shards[0].name)
    return _entry(_Candidate("chorus", _stem(shards[0]), shards, parts[2] if parts else 1), cache or ScanCache())


def _shards_of(entry: ModelEntry) -> list[Path]:
    return shard_paths(Path(entry.path))


def _exists(entry: ModelEntry) -> bool:
    return all(p.exists() for p in _shards_of(entry))


def _entry(cand: _Candidate, cache: ScanCache) -> ModelEntry:
    size = sum(_size(p) for p in cand.shards)
    base = ModelEntry(path=str(cand.shards[0]), name=cand.name, source=cand.source, size_bytes=size,
                      shards=cand.expected, repo=cand.repo, aliases=tuple(cand.aliases),
                      real_path=os.path.realpath(cand.shards[0]),
                      mmproj=str(cand.mmproj) if cand.mmproj is not None and cand.mmproj.is_file() else "")
    missing = missing_note(cand.shards, cand.expected)
    if missing or not cand.shards[0].exists():
        return replace(base, broken=missing or "the file is gone (a dangling link?)")
    try:
        facts, broken = cache.facts(cand.shards, cand.shards[0].name if cand.source != "ollama" else cand.name)
    except OSError as exc:
        return replace(base, broken=f"cannot read: {exc.strerror or exc}")
    except Exception as exc:  # noqa: BLE001 — a reader bug on one odd file must not empty the whole list
        log.exception("reading %s failed", cand.shards[0])
        return replace(base, broken=f"unreadable header ({type(exc).__name__}: {exc})")
    if facts is None:
        return replace(base, broken=broken)
    return replace(base, architecture=facts.architecture, quantization=facts.quantization, n_params=facts.n_params,
                   n_ctx_train=facts.n_ctx_train, has_chat_template=facts.has_chat_template, facts=facts)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _note_same_files(entries: list[ModelEntry]) -> list[ModelEntry]:
    by_file: dict[str, set[str]] = {}
    for e in entries:
        by_file.setdefault(e.real_path, set()).add(e.source)
    return [replace(e, same_file_as=tuple(sorted(by_file[e.real_path] - {e.source}))) for e in entries]


def _dedupe(candidates: list[_Candidate]) -> list[_Candidate]:
    """One candidate per real file within a source; the others' names become aliases."""
    kept: dict[str, _Candidate] = {}
    for cand in candidates:
        key = os.path.realpath(cand.shards[0]) if cand.shards else cand.name
        if key in kept:
            if cand.name != kept[key].name and cand.name not in kept[key].aliases:
                kept[key].aliases.append(cand.name)
        else:
            kept[key] = cand
    return list(kept.values())


def _skip(name: str) -> bool:
    lower = name.lower()
    return "mmproj" in lower or lower.startswith("incomplete") or not lower.endswith(".gguf")


def _stem(first: Path) -> str:
    """A model's name from its (first) file (app/models/names.py)."""
    return model_name(first)


def _walk(top: Path, depth: int = MAX_DEPTH) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(top, onerror=lambda exc: log.debug("skipped %s", exc)):
        rel_depth = len(Path(folder).relative_to(top).parts)
        dirs[:] = [] if rel_depth >= depth else sorted(d for d in dirs if not d.startswith("."))
        found += [Path(folder) / f for f in sorted(files) if not _skip(f)]
    return found


def _tree(root: Root) -> list[_Candidate]:
    out = []
    for shards, count in group(_walk(root.path)):
        repo = shards[0].parent.relative_to(root.path).as_posix()
        out.append(_Candidate(root.source, _stem(shards[0]), shards, count, "" if repo == "." else repo,
                              mmproj=projectors.beside(shards[0])))
    return out


def _ollama(root: Root) -> list[_Candidate]:
    out, manifests = [], root.path / "manifests"
    for manifest in sorted(p for p in manifests.rglob("*") if p.is_file()) if manifests.is_dir() else []:
        parts = manifest.relative_to(manifests).parts
        if len(parts) != 4:  # <registry>/<namespace>/<model>/<tag>
            continue
        try:
            layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
            digest = next(layer["digest"] for layer in layers if layer.get("mediaType") == OLLAMA_MODEL_LAYER)
            projector = next((layer["digest"] for layer in layers
                              if layer.get("mediaType") == projectors.OLLAMA_PROJECTOR_LAYER), None)
        except (OSError, ValueError, StopIteration, KeyError, TypeError, AttributeError):
            continue  # a manifest without a model layer (or not JSON) names no GGUF
        registry, namespace, model, tag = parts
        short = (f"{model}:{tag}" if namespace == "library" else f"{namespace}/{model}:{tag}")
        name = short if registry == "registry.ollama.ai" else f"{registry}/{short}"
        blob = root.path / "blobs" / str(digest).replace(":", "-")
        mmproj = root.path / "blobs" / str(projector).replace(":", "-") if projector else None
        out.append(_Candidate("ollama", name, [blob], 1, f"{registry}/{namespace}/{model}", mmproj=mmproj))
    return out


def _hf(root: Root) -> list[_Candidate]:
    from huggingface_hub import scan_cache_dir  # imported when a hub cache exists: it is not cheap
    from huggingface_hub.errors import CacheNotFound, CorruptedCacheException

    try:
        info = scan_cache_dir(root.path)
    except (CacheNotFound, CorruptedCacheException, OSError) as exc:
        log.debug("no hub cache at %s: %s", root.path, exc)
        return []
    out = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model" or not repo.revisions:
            continue
        revision = repo.refs.get("main") or max(repo.revisions, key=lambda r: r.last_modified)
        files = sorted(Path(f.file_path) for f in revision.files if not _skip(f.file_name))
        found = sorted(Path(f.file_path) for f in revision.files if projectors.is_projector(f.file_name))
        for shards, count in group(files):
            out.append(_Candidate(root.source, _stem(shards[0]), shards, count, repo.repo_id,
                                  mmproj=projectors.pick(shards[0], found)))
    return out


def _llamacpp(root: Root) -> list[_Candidate]:
    flat = sorted(p for p in root.path.iterdir() if not p.is_dir() and not _skip(p.name))
    out = [_Candidate(root.source, _stem(shards[0]), shards, count, mmproj=projectors.beside(shards[0]))
           for shards, count in group(flat)]
    if any(p.name.startswith("models--") for p in root.path.iterdir()):
        out += _hf(root)
    return out


def _jan(root: Root) -> list[_Candidate]:
    out, models = [], root.path / "llamacpp" / "models"
    for config in sorted(models.rglob("model.yml")) if models.is_dir() else []:
        try:
            data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
            model_path = Path(str(data["model_path"])).expanduser()
        except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError):
            continue
        path = model_path if model_path.is_absolute() else root.path / model_path
        mmproj = Path(str(data["mmproj_path"])).expanduser() if data.get("mmproj_path") else None
        if mmproj is not None and not mmproj.is_absolute():
            mmproj = root.path / mmproj
        model_id = config.parent.relative_to(models).as_posix()
        out.append(_Candidate("jan", str(data.get("name") or model_id), [path], 1, model_id, mmproj=mmproj))
    return out


_COLLECT = {"tree": _tree, "ollama": _ollama, "hf": _hf, "llamacpp": _llamacpp, "jan": _jan}
