"""The File menu's work: new/open/save/save as/recent/export, and the autosave that keeps the session safe.

The session is autosaved (crash-safe write, `app.session.store`) at most AUTOSAVE_MS after a change and on quit,
to the app-data folder, together with the name of the file it belongs to and whether it has changes that file
lacks; the next launch restores it. So quitting never loses anything and never asks. New and Open replace the
session, so they ask first when it has changes saved nowhere but the autosave.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from app.session import Session, SessionFileError, export, store
from app.ui.settings import Settings

log = logging.getLogger("chorus.ui.files")
AUTOSAVE_MS = 1500
FILTER = f"Chorus sessions (*{store.SUFFIX});;JSON (*.json);;All files (*)"


class SessionFiles(QObject):
    sig_replaced = Signal(object)
    """Another session takes the window's place (New, Open, a recent one); the argument is the Session."""
    sig_status = Signal(str)
    """The title or a short note changed (the window shows them)."""

    def __init__(self, window: QWidget, settings: Settings, session: Session, autosave_path: Path | None):
        super().__init__(window)
        self.window, self.settings = window, settings
        self.session = session
        self.autosave_path = autosave_path
        self.path: Path | None = Path(session.view["file"]) if session.view.get("file") else None
        self.unsaved = bool(session.view.get("unsaved", False))
        self.failed: str | None = None  # the last autosave error, if the latest write failed
        self._timer = QTimer(self, singleShot=True, interval=AUTOSAVE_MS)
        self._timer.timeout.connect(self.autosave)

    # --- state ------------------------------------------------------------------------------------------------
    @property
    def title(self) -> str:
        name = self.path.name if self.path else "Untitled session"
        return f"{name}{' •' if self.unsaved else ''} — Chorus"

    def changed(self) -> None:
        """Something in the session changed: it is unsaved, and autosaved within AUTOSAVE_MS."""
        if not self.unsaved:
            self.unsaved = True
            self.sig_status.emit(self.title)
        if self.autosave_path and not self._timer.isActive():
            self._timer.start()  # not restarted by later changes: a stream of changes still saves regularly

    def autosave(self) -> bool:
        self._timer.stop()
        if not self.autosave_path:
            return False
        self.session.view.update(file=str(self.path) if self.path else None, unsaved=self.unsaved)
        try:
            store.save_session(self.session, self.autosave_path)
        except OSError as exc:
            if self.failed is None:
                log.warning("autosave to %s failed: %s", self.autosave_path, exc)
                self.sig_status.emit(f"Autosave failed: {exc}")
            self.failed = str(exc)
            return False
        self.failed = None
        return True

    # --- menu actions -----------------------------------------------------------------------------------------
    def new(self) -> bool:
        if not self._may_replace("Starting a new session"):
            return False
        self._replace(Session(), None)
        return True

    def open(self, path: str | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self.window, "Open a session", self._start(), FILTER)
            if not path:
                return False
        try:
            session = store.load_session(path)
        except (SessionFileError, OSError) as exc:
            self.window.show_message("Could not open the session", f"{exc}\n\nThe current session is unchanged.",
                                     QMessageBox.Warning)
            return False
        if not self._may_replace("Opening another session"):
            return False
        self._replace(session, Path(path))
        self.settings.add_recent_session(str(Path(path).resolve()))
        return True

    def save(self) -> bool:
        return self.save_as(self.path) if self.path else self.save_as()

    def save_as(self, path: str | Path | None = None) -> bool:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self.window, "Save the session",
                                                  self._start(f"session{store.SUFFIX}"), FILTER)
            if not path:
                return False
            if not str(path).endswith(".json"):
                path = f"{path}{store.SUFFIX}"
        path = Path(path)
        self.session.view.pop("file", None)
        self.session.view.pop("unsaved", None)
        try:
            store.save_session(self.session, path)
        except OSError as exc:
            self.window.show_message("Could not save the session", str(exc), QMessageBox.Warning)
            return False
        self.path, self.unsaved = path, False
        self.settings.add_recent_session(str(path.resolve()))
        self.autosave()
        self.sig_status.emit(self.title)
        return True

    def export(self, kind: str, path: str | None = None) -> bool:
        """kind "markdown" or "jsonl"."""
        suffix, text = (".md", export.to_markdown) if kind == "markdown" else (".jsonl", export.to_jsonl)
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self.window, f"Export as {kind}",
                                                  self._start(f"{self._stem()}{suffix}"), f"*{suffix};;All files (*)")
            if not path:
                return False
        try:
            store.write_atomic(path, text(self.session))
        except OSError as exc:
            self.window.show_message("Could not export", str(exc), QMessageBox.Warning)
            return False
        self.sig_status.emit(f"Exported to {Path(path).name}")
        return True

    def on_quit(self) -> bool:
        """The window closes: autosave. Without an autosave (or if it fails), ask about unsaved changes."""
        if self.autosave():
            return True
        return self._may_replace("Quitting")

    # --- the menu ---------------------------------------------------------------------------------------------
    def build_menu(self, menu: QMenu, make_action, tail: list) -> None:
        """Fill the File menu; `make_action(text, shortcuts, slot)` makes a window action, `tail` follows."""
        w = self.window
        w.act_new = make_action("New session", ["Ctrl+Shift+N"], self.new)
        w.act_open_session = make_action("Open session…", ["Ctrl+O"], lambda: self.open())
        w.act_save = make_action("Save session", ["Ctrl+S"], self.save)
        w.act_save_as = make_action("Save session as…", ["Ctrl+Shift+S"], lambda: self.save_as())
        w.act_export_md = make_action("Export Markdown…", [], lambda: self.export("markdown"))
        w.act_export_jsonl = make_action("Export results (JSONL)…", [], lambda: self.export("jsonl"))
        menu.addAction(w.act_new)
        menu.addAction(w.act_open_session)
        self.recent_menu = menu.addMenu("Open recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        for action in [None, w.act_save, w.act_save_as, None, w.act_export_md, w.act_export_jsonl, *tail]:
            menu.addSeparator() if action is None else menu.addAction(action)

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
        if not self.unsaved or not any(p.turns or p.draft.strip() for p in self.session.panes):
            return True
        answer = QMessageBox.question(
            self.window, "Unsaved changes", f"{what} replaces this session. Save its changes first?",
            QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Save)
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard

    def _replace(self, session: Session, path: Path | None) -> None:
        self.session, self.path, self.unsaved = session, path, False
        self.sig_replaced.emit(session)
        self.autosave()
        self.sig_status.emit(self.title)
