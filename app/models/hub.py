"""Download GGUF models from the Hugging Face hub into its standard cache, so llama.cpp, LM Studio's importer and
every other huggingface_hub user share the files (and discover() lists them under "Hugging Face").

Everything goes through huggingface_hub's own client: `HfApi.list_models` (search), `HfApi.list_repo_tree`
(files and sizes), and for a download its `get_hf_file_metadata` and `http_get` into the cache layout
hf_hub_download writes (see `_download_one`: the partial file is kept, so a cancel or a crash resumes with a
Range request). A vision model's projector (`mmproj`, paired as app/models/projectors.py pairs them) is
downloaded with it, into the same snapshot, so discovery and *Open model…* find it beside the model. A finished
transfer is checked against the hub's size and, for LFS files (an ETag of 64 hex
digits), its sha256: a file that does not match is removed, so the next attempt starts clean. The hub's
address is `$HF_ENDPOINT`, read at each call (huggingface_hub reads it once, at import). Cancelling raises
from the progress callback inside the transfer loop, before a chunk is written.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from app.models import projectors
from app.models.info import quant_from_name
from app.models.shards import split_parts
from app.models.sources import hf_cache_dir

MIB = 1024 * 1024
# A file "fits" when its weights plus this share for the KV cache and compute buffers fit in memory: a
# hub file's header is not read before download, so the KV cache cannot be computed exactly yet.
OVERHEAD_SHARE, OVERHEAD_MIN = 0.2, 512 * MIB
_SHA256 = re.compile(r"^[0-9a-f]{64}$")  # an LFS file's ETag is its sha256; a small git file's is a git sha1


class HubError(RuntimeError):
    """The hub could not be reached or refused: the message names the address and the cause."""


class DownloadCancelled(Exception):
    """Raised inside the download when the user cancels; the partial file stays for a resume."""


@dataclass(frozen=True)
class HubRepo:
    repo_id: str
    downloads: int = 0
    likes: int = 0


@dataclass(frozen=True)
class HubFile:
    """One model in a repo: a GGUF file, or every shard of a split one (`files`, first shard first)."""

    repo_id: str
    files: tuple[str, ...]
    size: int
    quantization: str
    best: bool = False  # the file that fits memory best (mark_best)
    mmproj: str | None = None  # the repo's vision projector for this model, downloaded with it (None: text only)
    mmproj_size: int = 0

    @property
    def filename(self) -> str:
        return self.files[0]


def endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def cache_dir() -> Path:
    """The hub cache huggingface_hub would use now ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)."""
    return hf_cache_dir(Path.home(), dict(os.environ))


def _api():
    from huggingface_hub import HfApi

    return HfApi(endpoint=endpoint())


def _unreachable(exc: Exception) -> HubError:
    where = endpoint() or "https://huggingface.co"
    from huggingface_hub.errors import OfflineModeIsEnabled

    if isinstance(exc, OfflineModeIsEnabled):
        return HubError("Offline mode is on (HF_HUB_OFFLINE): the hub cannot be searched or downloaded from.")
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return HubError(f"Cannot reach the Hugging Face hub at {where}: {reason}. Check the internet connection "
                    "(models already downloaded are listed in Models on this computer).")


def search(query: str, limit: int = 40) -> list[HubRepo]:
    """GGUF repos matching `query`, most downloaded first. Raises HubError."""
    try:
        found = _api().list_models(search=query or None, filter="gguf", sort="downloads", limit=limit)
        return [HubRepo(m.id, m.downloads or 0, m.likes or 0) for m in found]
    except Exception as exc:  # httpx errors, HfHubHTTPError, offline mode: all mean "not reachable"
        raise _unreachable(exc) from exc


def files(repo_id: str) -> list[HubFile]:
    """The repo's GGUF models with quantization and size (split models as one), each with the repo's projector
    that belongs to it (mmproj files are not models of their own)."""
    try:
        tree = [f for f in _api().list_repo_tree(repo_id, recursive=True) if hasattr(f, "size")]
    except Exception as exc:
        raise _unreachable(exc) from exc
    models: dict[str, list] = {}
    found = {PurePosixPath(f.path): f.size for f in tree if projectors.is_projector(f.path.rsplit("/", 1)[-1])}
    for f in sorted(tree, key=lambda f: f.path):
        name = f.path.rsplit("/", 1)[-1]
        if not name.lower().endswith(".gguf") or "mmproj" in name.lower():
            continue
        parts = split_parts(name)
        key = f.path[: -len(name)] + (parts[0] if parts else name)
        models.setdefault(key, []).append(f)
    out = []
    for group in models.values():
        mmproj = projectors.pick(PurePosixPath(group[0].path), list(found))
        out.append(HubFile(repo_id, tuple(f.path for f in group), sum(f.size for f in group),
                           quant_from_name(group[0].path) or "?", mmproj=str(mmproj) if mmproj else None,
                           mmproj_size=found[mmproj] if mmproj else 0))
    return out


def needed(file: HubFile) -> int:
    return int(file.size * (1 + OVERHEAD_SHARE)) + OVERHEAD_MIN


def mark_best(found: list[HubFile], memory: int) -> list[HubFile]:
    """Mark the largest file (the least quantized) whose weights plus an allowance for the KV cache and compute
    buffers fit in `memory` bytes; none is marked when nothing fits."""
    fitting = [f for f in found if needed(f) <= memory]
    best = max(fitting, key=lambda f: f.size) if fitting else None
    return [replace(f, best=f is best) for f in found]


def download(file: HubFile, progress: Callable[[int, int, float], None] | None = None,
             cancel: threading.Event | None = None, cache: Path | None = None) -> Path:
    """Download every file of `file` (and its projector) into the hub cache; returns the local path of the
    first (its snapshot link). `progress(done, total, bytes_per_second)` is called as data arrives. Raises
    DownloadCancelled (the partial file stays and the next call resumes it) or HubError."""
    cancel = cancel or threading.Event()
    meter = _Meter(file.size + file.mmproj_size, progress)
    paths = []
    try:
        for name in (*file.files, *([file.mmproj] if file.mmproj else [])):
            paths.append(_download_one(file.repo_id, name, Path(cache or cache_dir()), meter, cancel))
    except (DownloadCancelled, HubError):
        raise
    except Exception as exc:
        if cancel.is_set():
            raise DownloadCancelled() from exc
        raise _unreachable(exc) from exc
    meter.report(file.size + file.mmproj_size)
    return paths[0]


class _Meter:
    """Bytes done over all the files of one download, and the speed of this session's transfer."""

    def __init__(self, total: int, callback):
        self.total, self.callback = total, callback
        self.done_files = 0  # bytes of the files finished before the current one
        self.start, self.resumed = time.monotonic(), None

    def report(self, done: int) -> None:
        if self.resumed is None:
            self.resumed = done  # what was already on disk when this session started
        if self.callback:
            elapsed = max(time.monotonic() - self.start, 1e-6)
            self.callback(done, self.total, (done - self.resumed) / elapsed)


def _download_one(repo_id: str, filename: str, cache: Path, meter: _Meter, cancel: threading.Event) -> Path:
    """One file into `cache`, laid out as hf_hub_download lays it out: blobs/<etag>, snapshots/<commit>/<file>
    (a relative link to the blob), refs/main. The transfer is huggingface_hub's own http_get; the partial file
    is kept as blobs/<etag>.incomplete between attempts and resumed with a Range request (hf_hub_download itself
    deletes partial files on failure since huggingface_hub 1.x, huggingface/huggingface_hub#4228)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.file_download import http_get, repo_folder_name
    from huggingface_hub.utils import WeakFileLock, build_hf_headers

    meta = get_hf_file_metadata(hf_hub_url(repo_id, filename, endpoint=endpoint()))
    if not meta.etag or not meta.commit_hash:
        raise HubError(f"the hub sent no ETag or commit for {repo_id}/{filename}")
    folder = repo_folder_name(repo_id=repo_id, repo_type="model")
    repo = cache / folder
    blob = repo / "blobs" / meta.etag
    link = repo / "snapshots" / meta.commit_hash / filename
    blob.parent.mkdir(parents=True, exist_ok=True)
    lock = cache / ".locks" / folder / f"{meta.etag}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with WeakFileLock(lock):
        if not blob.exists():
            partial = blob.with_name(blob.name + ".incomplete")
            done_before = meter.done_files

            class Progress(tqdm):
                def __init__(self, *args, **kwargs):
                    kwargs["file"] = io.StringIO()  # no terminal output: the caller shows progress
                    super().__init__(*args, **kwargs)

                def update(self, n=1):
                    if cancel.is_set():
                        raise DownloadCancelled()  # before the chunk is written: the partial file stays whole
                    result = super().update(n)
                    meter.report(done_before + self.n)
                    return result

            if meta.size is not None and partial.exists() and partial.stat().st_size > meta.size:
                partial.unlink()  # longer than the file: not a part of it, so nothing to resume
            with partial.open("ab") as f:
                # The size is checked below, not by http_get: its check would raise and keep the partial.
                http_get(meta.location, f, resume_size=f.tell(), headers=build_hf_headers(),
                         expected_size=None, tqdm_class=Progress)
            _check(partial, filename, meta.size, meta.etag)
            os.replace(partial, blob)
    meter.done_files += blob.stat().st_size
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.unlink(missing_ok=True)  # a dangling link from an earlier layout
        try:
            os.symlink(os.path.relpath(blob, link.parent), link)
        except OSError:  # no symlinks (Windows without developer mode): a copy, as huggingface_hub does
            shutil.copyfile(blob, link)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(meta.commit_hash)
    return link


def _check(partial: Path, filename: str, size: int | None, etag: str) -> None:
    """A finished transfer must have the hub's size and (LFS files) sha256; otherwise it is removed, so a retry
    downloads the file afresh, and HubError says what differed."""
    got = partial.stat().st_size
    problem = None
    if size is not None and got != size:
        problem = f"got {got:,} bytes where the hub lists {size:,}"
    elif _SHA256.match(etag.lower()):
        digest = hashlib.sha256()
        with partial.open("rb") as f:
            for chunk in iter(lambda: f.read(MIB), b""):
                digest.update(chunk)
        if digest.hexdigest() != etag.lower():
            problem = f"its sha256 is {digest.hexdigest()[:12]}… where the hub lists {etag.lower()[:12]}…"
    if problem:
        partial.unlink(missing_ok=True)
        raise HubError(f"The download of {filename} is damaged ({problem}). The partial file was removed: "
                       "downloading again starts afresh.")
