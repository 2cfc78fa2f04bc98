"""The File menu's work: new/open/save/save as/recent/export, and the autosave that keeps the session safe.

The session is autosaved (crash-safe write, `app.session.store`) AUTOSAVE_MS after any change it announces
(`session.events`), later for a large one (each save rewrites the file: `Autosaver.rest_s` spaces them by
their size: 24 MB, 24 s apart), and on quit, to this instance's own autosave in the app-data folder
(`app.session.autosave.Autosaver`: encoded here on the GUI thread, formatted, written and fsynced on its worker thread),
together with the name of the file it belongs to and whether it has changes that file lacks; the next launch
restores it. So quitting never loses anything and never asks. New and Open replace the session's content
(through the controller), so they ask first when it has changes saved nowhere but the autosave. Open reads and
decodes the file on a worker thread, the window going on meanwhile; the panes it brings are built as they come
into view (app/ui/pane/grid.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from app.session import Session, SessionController, SessionFileError, export, images, store
from app.session import autosave as autosaves
from app.session.schema import image_refs
from app.ui.settings import Settings
from app.ui.widgets.off_thread import wait_beside
from app.ui.widgets.sliced import run_sliced

log = logging.getLogger("chorus.ui.files")
AUTOSAVE_MS = 1500
FILTER = f"Chorus sessions (*{store.SUFFIX});;JSON (*.json);;All files (*)"


class SessionFiles(QObject):
    sig_status = Signal(str)
    """The title or a short note changed (the window shows them)."""
    sig_message = Signal(str, str)
    """Something the user must read (title, text): a file that could not be opened, saved or exported."""

    def __init__(self, session: Session, controller: SessionController, settings: Settings,
                 autosave: Path | autosaves.Autosaver | None, dialog_parent: QWidget, file: str | None = None,
                 unsaved: bool = False):
        """`autosave`: this instance's Autosaver (the files close it), or a path to own one at (if another
        window owns that one, a slot of its own in the same folder), or None (no autosave); `file`/`unsaved`:
        what the restored autosave said (the file this session belongs to, and whether it had changes that file
        lacks); `dialog_parent` owns the file dialogs and questions."""
        super().__init__(dialog_parent)
        self.session, self.controller, self.settings = session, controller, settings
        self.parent_widget = dialog_parent
        self.path: Path | None = Path(file) if file else None
        self.unsaved = unsaved
        self.failed: str | None = None  # the last autosave error, if the latest write failed
        self.saver: autosaves.Autosaver | None = None
        if isinstance(autosave, autosaves.Autosaver):
            self.saver = autosave
        elif autosave is not None:
            try:
                self.saver = autosaves.Autosaver(autosave)
            except autosaves.AutosaveBusy:  # another window owns it: this one takes a slot of its own there
                try:
                    self.saver = autosaves.claim(Path(autosave).parent)
                except (autosaves.AutosaveBusy, OSError) as exc:
                    self.failed = str(exc)
                    log.warning("autosave off: %s", exc)
        self.autosave_path = self.saver.path if self.saver else None
        self.autosave_ms = AUTOSAVE_MS  # after a change, the autosave comes this much later (more for a large one)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(lambda: self.autosave(wait=False))
        session.events.all.connect(self.changed)
        self.clusters = None  # session -> its answer clusters for exports (the window's MeaningLink.clusters)

    # --- state ------------------------------------------------------------------------------------------------
    @property
    def title(self) -> str:
        name = self.path.name if self.path else "Untitled session"
        number = autosaves.slot_number(self.autosave_path) if self.autosave_path else 1
        own = f" — window {number} (its own session)" if number > 1 else ""  # another Chorus runs beside it
        return f"{name}{' •' if self.unsaved else ''} — Chorus{own}"

    def changed(self, *_info) -> None:
        """Something in the session changed: it is unsaved, and autosaved `autosave_ms` later (or, for a large
        session, when the last save's size allows: `Autosaver.rest_s`)."""
        if not self.unsaved:
            self.unsaved = True
            self.sig_status.emit(self.title)
        if self.autosave_path and not self._timer.isActive():
            # not restarted by later changes: a stream of changes still saves regularly
            self._timer.start(max(self.autosave_ms, round(self.saver.rest_s() * 1000)))

    def autosave(self, wait: bool = True) -> bool:
        """Encode the session and hand it to the autosave's worker; `wait` until it is written (the periodic
        autosave does not wait). False when there is no autosave, or this save (`wait`) or the one before it
        failed."""
        self._timer.stop()
        if not self.saver or self._replacing:
            return False
        try:
            self.saver.save(self.session, str(self.path) if self.path else None, self.unsaved)
            if wait:
                self.saver.flush()
            error = self.saver.failed  # without waiting: the outcome of the write before this one
        except SessionFileError as exc:
            error = str(exc)
        if error is not None:
            if self.failed is None:
                log.warning("autosave to %s failed: %s", self.autosave_path, error)
                self.sig_status.emit(f"Autosave failed: {error}")
            self.failed = error
            return False
        self.failed = None
        return True

    def close(self) -> None:
        """The window is gone: write what is pending and give this instance's autosave slot up."""
        self._timer.stop()
        if self.saver:
            self.saver.close()

    # --- menu actions -----------------------------------------------------------------------------------------
    def new(self) -> bool:
        return self.replace_with(Session(), "Starting a new session")

    def open(self, path: str | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.parent_widget, "Open a session", self._start(), FILTER)
            if not path:
                return False
        try:
            session = self._load_elsewhere(path)
        except (SessionFileError, OSError) as exc:
            self.sig_message.emit("Could not open the session", f"{exc}\n\nThe current session is unchanged.")
            return False
        if session is None:
            return False  # another open is on its way
        if not self._may_replace("Opening another session"):
            return False
        self._replace(session, Path(path))
        self.settings.add_recent_session(str(Path(path).resolve()))
        missing = session.missing_images(path)
        if missing:  # the rest loaded: say which images did not
            self.sig_message.emit("Some images are missing", missing)
        return True

    _loading = False  # a file is being read, or the session replaced: another open waits its turn
    _replacing = False

    def _load_elsewhere(self, path: str) -> Session | None:
        """Read and decode the file on a worker thread while the window goes on (app/ui/widgets/off_thread.py),
        so a large session never stalls it; the result, or the worker's error raised here. None when another
        open is already loading."""
        if self._loading:
            return None
        self._loading = True
        try:
            return wait_beside(lambda: Session.load(path), "chorus-open-session")
        finally:
            self._loading = False

    def replace_with(self, session: Session, what: str) -> bool:
        """Show `session` (an example) in place of this one, untitled, after asking as New does; False if declined
        (or while another session is being opened)."""
        if self._loading or not self._may_replace(what):
            return False
        self._replace(session, None)
        return True

    def save(self) -> bool:
        return self.save_as(self.path) if self.path else self.save_as()

    def save_as(self, path: str | Path | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self.parent_widget, "Save the session",
                                                  self._start(f"session{store.SUFFIX}"), FILTER)
            if not path:
                return False
            if not str(path).endswith(".json"):
                path = f"{path}{store.SUFFIX}"
        path = Path(path)
        try:
            self.session.save(path)
        except (OSError, SessionFileError) as exc:
            self.sig_message.emit("Could not save the session", str(exc))
            return False
        self.path, self.unsaved = path, False
        self.settings.add_recent_session(str(path.resolve()))
        self.autosave(wait=False)
        self.sig_status.emit(self.title)
        return True

    def export(self, kind: str, path: str | None = None) -> bool:
        """kind "markdown" or "jsonl"."""
        suffix, text = (".md", export.to_markdown) if kind == "markdown" else (".jsonl", export.to_jsonl)
        clusters = self.clusters(self.session) if self.clusters is not None else None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self.parent_widget, f"Export as {kind}",
                                                  self._start(f"{self._stem()}{suffix}"), f"*{suffix};;All files (*)")
            if not path:
                return False
        folder = images.folder_for(path)  # the messages' images, beside the export, named by path in it
        try:
            refs = image_refs(self.session)
            store.save_images(refs, path)
            store.write_atomic(path, text(self.session, clusters, folder.name if refs else None))
        except OSError as exc:
            self.sig_message.emit("Could not export", str(exc))
            return False
        self.sig_status.emit(f"Exported to {Path(path).name}")
        return True

    def on_quit(self) -> bool:
        """The window closes: autosave (written before the answer). Without an autosave (or if it fails), ask
        about unsaved changes."""
        if self.autosave():
            return True
        return self._may_replace("Quitting")

    # --- the menu ---------------------------------------------------------------------------------------------
    def build_menu(self, menu: QMenu, make_action, tail: list) -> dict:
        """Fill the File menu; `make_action(text, shortcuts, slot)` makes a window action, `tail` follows.
        Returns the actions by name (new, open, save, save_as, export_md, export_jsonl)."""
        acts = {"new": make_action("New session", ["Ctrl+Shift+N"], self.new),
                "open": make_action("Open session…", ["Ctrl+O"], lambda: self.open()),
                "save": make_action("Save session", ["Ctrl+S"], self.save),
                "save_as": make_action("Save session as…", ["Ctrl+Shift+S"], lambda: self.save_as()),
                "export_md": make_action("Export Markdown…", [], lambda: self.export("markdown")),
                "export_jsonl": make_action("Export results (JSONL)…", [], lambda: self.export("jsonl"))}
        menu.addAction(acts["new"])
        menu.addAction(acts["open"])
        self.recent_menu = menu.addMenu("Open recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        for action in [None, acts["save"], acts["save_as"], None, acts["export_md"], acts["export_jsonl"], *tail]:
            menu.addSeparator() if action is None else menu.addAction(action)
        return acts

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for path in self.settings.recent_sessions():
            self.recent_menu.addAction(Path(path).name, lambda p=path: self.open(p)).setToolTip(path)
        if not self.recent_menu.actions():
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    # --- helpers ----------------------------------------------------------------------------------------------
    def _start(self, name: str = "") -> str:
        """Where a file dialog starts: this session's folder (else home), with `name` suggested."""
        folder = self.path.parent if self.path else Path.home()
        return str(folder / name) if name else str(folder)

    def _stem(self) -> str:
        return self.path.name.removesuffix(store.SUFFIX) if self.path else "session"

    def _may_replace(self, what: str) -> bool:
        """Ask before losing changes that are saved nowhere else."""
        evaluated = self.session.evaluation is not None and any(c.finished for c in self.session.evaluation.cells)
        if not self.unsaved or not (evaluated or any(p.turns or p.draft.strip() for p in self.session.panes)):
            return True
        answer = QMessageBox.question(
            self.parent_widget, "Unsaved changes", f"{what} replaces this session. Save its changes first?",
            QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Save)
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard

    def _replace(self, session: Session, path: Path | None) -> None:
        """A few panes leave or come per event-loop turn (hundreds of panes never stall the window); meanwhile
        nothing else opens and the half-replaced session is not autosaved."""
        self._loading = self._replacing = True
        try:
            run_sliced(self.controller.replace_steps(session))
        finally:
            self._loading = self._replacing = False
        self.path, self.unsaved = path, False
        self.autosave(wait=False)
        self.sig_status.emit(self.title)
