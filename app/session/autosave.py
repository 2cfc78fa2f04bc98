"""Where the current session lives between launches, and how it comes back after a crash.

Each running instance owns one autosave slot: `autosave.chorus.json` (the first; the name earlier versions
used), then `autosave-2.chorus.json`, ... A slot is owned by holding its lock file (`.<name>.lock`, an OS lock
through `filelock`, released by the OS when the process dies), so two windows never write the same file, and
an instance only ever clears the stale temporaries of its own slot. At start-up an instance claims the first
free slot that holds a session (the one a closed or crashed instance left), else the first free one; the other
free slots holding sessions are `orphans()`, offered to the user, each restored by the next instance started.

The autosave is written with the same crash-safe write as any session file (temp file, fsync, rename; its
images first, into `autosave.images/`), plus
a record of the file the session belongs to and whether it had changes that file lacks. `Autosaver.save`
encodes on the caller's thread (the GUI's; timed in `encode_seconds`: the session's compact JSON in pieces, the
panes' packed versions passed on as the deflated blocks their lists keep, neither encoded nor copied) and
writes it on a worker thread, which inflates only the blocks its last file lacks (written_blocks.py); the latest
text wins when saves come faster than writes. Each save rewrites the whole file, so its caller spaces them by their
size (`rest_s`: WRITE_RATE on average): a session of a megabyte or two is saved as often as ever, an hour of
regenerating (24 MB) every 24 s, where every 1.5 s it wrote 16 MB/s to the disk. The
autosave is written compact, not indented as a saved session is: formatting is one call of msgspec's that holds
the GIL throughout, and at 1,000 versions (20 MB) it held the GUI thread ~50-100 ms on every autosave; nobody
diffs the autosave, and it reads the same. An autosave that cannot be used is moved aside (kept for
the user, never deleted) and the app starts with a clean session and a message: launch never crashes on one.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs
from filelock import FileLock, Timeout

from app.session import schema, store
from app.session.schema import Autosave
from app.session.session import Session
from app.session.version_list import Deflated
from app.session.written_blocks import WrittenBlocks

log = logging.getLogger("chorus.session.autosave")
APP_NAME = "Chorus"
AUTOSAVE_NAME = "autosave.chorus.json"
MAX_SLOTS = 64  # instances running at once, each with its own autosave
# The bytes a second autosaves write at most, on average: a save rewrites the whole file (temp file, fsync, rename).
# In bench --soak's hour, 1.5 s apart, the growing file (24 MB at the end) was written 2,218 times and the window's
# runs a minute fell 3 % as it grew; spaced by this rate, 415 times, and they did not fall (docs/benchmarks.md).
WRITE_RATE = 1_000_000
DATA_DIR_ENV = "CHORUS_DATA_DIR"  # overrides the platform's app-data folder (tests, portable installs)


def data_dir() -> Path:
    """The platform's per-user app-data folder for Chorus (e.g. ~/.local/share/Chorus on Linux)."""
    override = os.environ.get(DATA_DIR_ENV)
    return Path(override) if override else platformdirs.user_data_path(APP_NAME, appauthor=False)


def autosave_path() -> Path:
    """The first slot's file (the only one before instances had their own)."""
    return data_dir() / AUTOSAVE_NAME


def slot_path(folder: Path, index: int) -> Path:
    return folder / (AUTOSAVE_NAME if index == 0 else AUTOSAVE_NAME.replace(".", f"-{index + 1}.", 1))


def slot_number(path: Path) -> int:
    """Which slot the file is, counted from 1 (the first window's); 1 for a name that is no slot's."""
    head, dot, tail = AUTOSAVE_NAME.partition(".")
    name = path.name
    if name.startswith(f"{head}-") and name.endswith(dot + tail) and name[len(head) + 1:-len(dot + tail)].isdigit():
        return int(name[len(head) + 1:-len(dot + tail)])
    return 1


def lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


class AutosaveBusy(RuntimeError):
    """Another running instance holds this autosave file."""


@dataclass
class Restored:
    """What the last run left: its session (None: nothing, or it could not be used), the file that session
    belongs to, whether it had unsaved changes, and a message for the user (None: nothing to say)."""

    session: Session | None = None
    file: str | None = None
    unsaved: bool = False
    message: str | None = None


def claim(folder: Path | None = None) -> Autosaver:
    """This instance's autosave: the first free slot holding a session, else the first free slot."""
    folder = folder or data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    paths = [slot_path(folder, i) for i in range(MAX_SLOTS)]
    for path in sorted(paths, key=lambda p: not p.exists()):  # stable: slots with a session first, in order
        try:
            return Autosaver(path)
        except AutosaveBusy:
            continue
    raise AutosaveBusy(f"{MAX_SLOTS} instances of Chorus are running: this one has no autosave")


def orphans(folder: Path | None = None, own: Path | None = None) -> list[Path]:
    """Autosaves no running instance holds (left by instances that closed or crashed), `own` excepted."""
    folder = folder or data_dir()
    found = []
    for path in (slot_path(folder, i) for i in range(MAX_SLOTS)):
        if path == own or not path.exists():
            continue
        lock = FileLock(lock_path(path), timeout=0)
        try:
            with lock:
                found.append(path)
        except Timeout:
            continue
    return found


class Autosaver:
    """One autosave file, owned (locked) from creation until `close()`. Raises AutosaveBusy when another
    instance owns it. `encodes`/`encode_seconds`: the saves and the time spent encoding them on the caller's
    thread; `writes`/`write_seconds`: the same for the worker's writes; `failed`: the last write's error."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(lock_path(self.path), timeout=0, thread_local=False)
        try:
            self._lock.acquire()
        except Timeout as exc:
            raise AutosaveBusy(f"another running Chorus autosaves to {self.path}") from exc
        self.encodes, self.encode_seconds, self.writes, self.write_seconds = 0, 0.0, 0, 0.0
        self.failed: str | None = None
        self._last_save: tuple[float, int] | None = None  # (time.monotonic() of the last save, its bytes)
        self._pending: list | None = None  # the text, in pieces (store.encode_pieces), inflated as written
        self._images: list = []  # the images the pending text names (written before it)
        self._writing = False
        self._written = WrittenBlocks()  # the last file's blocks of versions, read back, not inflated again
        self._closed = False
        self._cv = threading.Condition()
        self._worker = threading.Thread(target=self._run, name="autosave", daemon=True)
        self._worker.start()

    def restore(self) -> Restored:
        """This slot's session, its stale temporaries cleared (ours alone: we hold its lock)."""
        return restore(self.path)

    def save(self, session: Session, file: str | None, unsaved: bool) -> None:
        """Encode now (raises SessionFileError for text that cannot be saved); write on the worker."""
        start = time.perf_counter()
        text = store.encode_pieces(session, Autosave(file=file, unsaved=unsaved))
        refs = schema.image_refs(session)
        size = sum(piece.size if isinstance(piece, Deflated) else len(piece) for piece in text)
        with self._cv:
            self.encode_seconds += time.perf_counter() - start
            self.encodes += 1
            self._last_save = (time.monotonic(), size)
            if self._closed:
                raise store.SessionFileError("the autosave is closed")
            self._pending, self._images = text, refs
            self._cv.notify_all()

    def rest_s(self) -> float:
        """How long the next save should wait to keep the writes at WRITE_RATE on average: the last save's size
        at that rate, less the time since it (0: save whenever)."""
        if self._last_save is None:
            return 0.0
        at, size = self._last_save
        return max(0.0, size / WRITE_RATE - (time.monotonic() - at))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every save so far is written; False if that failed (see `failed`) or timed out."""
        with self._cv:
            done = self._cv.wait_for(lambda: self._pending is None and not self._writing, timeout)
            return done and self.failed is None

    def close(self) -> bool:
        """Write what is pending, stop the worker and give the slot up. Returns flush()'s answer."""
        ok = self.flush()
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._worker.join()
        self._written.close()
        self._lock.release()
        return ok

    def _run(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._pending is not None or self._closed)
                if self._pending is None:
                    return
                text, self._pending, self._writing = self._pending, None, True
                refs = self._images
            start = time.perf_counter()
            try:
                store.save_images(refs, self.path)
                store.write_atomic(self.path, self._written.pieces(text))  # compact: see the module's docstring
                self._written.written(self.path)
                error = None
            except OSError as exc:
                self._written.failed()
                error = str(exc)
                log.warning("autosave to %s failed: %s", self.path, exc)
            with self._cv:
                self.writes += 1
                self.write_seconds += time.perf_counter() - start
                self.failed, self._writing = error, False
                self._cv.notify_all()


def write(session: Session, path: Path, file: str | None, unsaved: bool) -> None:
    """A synchronous autosave write to `path` (tests, tools)."""
    store.save_session(session, path, Autosave(file=file, unsaved=unsaved))


def restore(path: Path | None = None) -> Restored:
    """The session in an autosave file. Call it only for a slot this process holds (see `Autosaver.restore`):
    it clears the file's stale temporaries."""
    path = path or autosave_path()
    if path.parent.exists():
        store.remove_stale_temps(path)  # a save the last run was killed in the middle of
    if not path.exists():
        return Restored()
    try:
        fields = store.read_autosave(path)
        record = fields.pop("autosave")
        return Restored(Session(**fields), record.file, record.unsaved)
    except Exception as exc:  # noqa: BLE001 — whatever is wrong with it, the app must start
        if not isinstance(exc, store.SessionFileError | OSError):
            log.exception("the autosave %s could not be used", path)
        reason = str(exc) if isinstance(exc, store.SessionFileError | OSError) else f"{type(exc).__name__}: {exc}"
        try:
            kept = store.move_aside(path)
        except OSError as move_error:
            return Restored(message=f"The last session could not be restored ({reason}) nor moved aside "
                                    f"({move_error}).")
        return Restored(message=f"The last session could not be restored: {reason}. It was kept as {kept.name} "
                                f"in {kept.parent}.")
