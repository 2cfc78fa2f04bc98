"""Model → Models on this computer…: the GGUF files other apps downloaded, with what each needs in memory, and
Chorus's own (`builtin`, the embedded default; `loaded`, the model loaded now, marked in bold). When no app's
folder holds a model it says where it looked and how to add one (models_help.py); Open a GGUF file… loads one.

The last scan shows at once (from the scan cache); a rescan runs off the GUI thread with a progress bar and is
cheap when nothing changed (no header is read again). The dialog never touches the window: Load and Add as
another backend are signals (`sig_load(path)`, `sig_add_backend(path)`), Reveal in folder opens the folder
(`reveal` callable, the file manager by default) and emits `sig_reveal(path)`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.models import ModelEntry, ScanCache, discover
from app.models.sources import SOURCE_LABELS
from app.ui.models.help import folders_text, help_html, looked_in
from app.ui.models.hub import HubDialog
from app.ui.models.table import ENTRY_ROLE, ModelsFilter, build_model
from app.ui.settings import Settings

log = logging.getLogger("chorus.ui.models")


class ScanJob(QObject):
    """Runs a scan in a thread; its signals arrive on the GUI thread (queued). Parentless on purpose: the thread
    holds it, so it outlives a dialog closed mid-scan."""

    sig_progress = Signal(int, int, str)
    sig_done = Signal(object)  # list[ModelEntry]
    sig_failed = Signal(str)

    def start(self, scan: Callable[..., list[ModelEntry]], **kwargs) -> threading.Thread:
        def run():
            try:
                entries = scan(progress=lambda done, total, name: self.sig_progress.emit(done, total, name), **kwargs)
            except Exception as exc:  # a scan must never take the window down
                log.exception("model scan failed")
                self.sig_failed.emit(f"{type(exc).__name__}: {exc}")
                return
            self.sig_done.emit(entries)

        thread = threading.Thread(target=run, name="chorus-model-scan", daemon=True)
        thread.start()
        return thread


class ModelsDialog(QDialog):
    sig_load = Signal(str)
    """Load this model file as the main model (the receiver asks about memory and running generations)."""
    sig_add_backend = Signal(str)
    """Open this model file as another local backend."""
    sig_reveal = Signal(str)
    """The user asked to see this file in its folder."""
    sig_scanned = Signal(int)
    """A scan finished with this many models."""

    def __init__(self, settings: Settings, parent: QWidget | None = None, *, cache: ScanCache | None = None,
                 scan: Callable[..., list[ModelEntry]] = discover, scan_kwargs: dict | None = None,
                 reveal: Callable[[str], None] | None = None, hub_dialog: Callable[[QWidget], QDialog] | None = None,
                 loaded: str | None = None, builtin: str | None = None):
        """`hub_dialog(parent)` makes the Download dialog (default: HubDialog over the hub); `loaded` is the
        main model's file, `builtin` the embedded default's (both listed even when no app's folder has them)."""
        super().__init__(parent)
        self.setWindowTitle("Models on this computer")
        self.resize(1280, 620)
        self.settings, self.cache, self._scan = settings, cache or ScanCache.default(), scan
        self._scan_kwargs = dict(scan_kwargs or {})
        self.loaded = loaded
        if loaded or builtin:
            self._scan_kwargs.setdefault("own", tuple(p for p in (loaded, builtin) if p))
        self._reveal = reveal or (lambda path: QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(path).parent))))
        self._hub_dialog = hub_dialog or (lambda parent: HubDialog(settings, parent))
        self.entries: list[ModelEntry] = []
        self.job: ScanJob | None = None
        self._build()
        try:
            cached = [ModelEntry.from_dict(d) for d in self.cache.last_entries]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a cache from another version
            log.info("last scan not shown: %s", exc)
            cached = []
        if cached:
            self.show_entries(cached, "From the last scan; rescanning…")
        self.rescan()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.search = QLineEdit(placeholderText="Search name, architecture, quantization, path…",
                                clearButtonEnabled=True)
        self.search.textChanged.connect(lambda text: self.proxy.set_search(text))
        self.source = QComboBox(objectName="sourceFilter")
        self.source.addItem("All sources", None)
        for key, label in SOURCE_LABELS.items():
            self.source.addItem(label, key)
        self.source.currentIndexChanged.connect(lambda: self.proxy.set_source(self.source.currentData()))
        self.rescan_button = QPushButton("Rescan", clicked=self.rescan)
        self.folder_button = QPushButton("Add folder…", clicked=self.add_folder)
        self.open_button = QPushButton("Open a GGUF file…", clicked=self.open_file)
        top.addWidget(self.search, 1)
        top.addWidget(self.source)
        top.addWidget(self.open_button)
        top.addWidget(self.folder_button)
        top.addWidget(self.rescan_button)
        top.addWidget(QPushButton("Download from Hugging Face…", clicked=self.open_hub))
        layout.addLayout(top)
        self.model = QStandardItemModel(self)
        self.proxy = ModelsFilter(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView(objectName="modelsTable", sortingEnabled=True)
        self.table.setModel(self.proxy)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.ElideMiddle)  # long paths keep their start and their file name
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)  # the scan's order until a click
        self.table.doubleClicked.connect(lambda _: self.load_selected())
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_buttons())
        layout.addWidget(self.table, 1)
        self.help = QLabel(objectName="modelsHelp", textFormat=Qt.RichText, wordWrap=True, visible=False,
                           textInteractionFlags=Qt.TextBrowserInteraction)
        self.help.linkActivated.connect(lambda link: {"open": self.open_file, "folder": self.add_folder,
                                                      "hub": self.open_hub}[link]())
        layout.addWidget(self.help)
        bottom = QHBoxLayout()
        self.progress = QProgressBar(minimumWidth=160, maximumWidth=240, textVisible=True)
        self.status = QLabel(objectName="scanStatus")
        self.load_button = QPushButton("Load", clicked=self.load_selected, default=True)
        self.backend_button = QPushButton("Add as another backend", clicked=self.add_selected)
        self.reveal_button = QPushButton("Reveal in folder", clicked=self.reveal_selected)
        bottom.addWidget(self.progress)
        bottom.addWidget(self.status, 1)
        for button in (self.reveal_button, self.backend_button, self.load_button,
                       QPushButton("Close", clicked=self.reject)):
            bottom.addWidget(button)
        layout.addLayout(bottom)
        self._update_buttons()

    # --- scanning ----------------------------------------------------------------------------------------------
    def rescan(self) -> None:
        if self.job is not None:
            return
        self.job = ScanJob()
        self.job.sig_progress.connect(self._on_progress)
        self.job.sig_done.connect(self._on_done)
        self.job.sig_failed.connect(self._on_failed)
        self.rescan_button.setEnabled(False)
        self.progress.setRange(0, 0)
        self.progress.show()
        kwargs = dict(self._scan_kwargs)
        kwargs.setdefault("folders", self.settings.model_folders())
        self.job.start(self._scan, cache=self.cache, **kwargs)

    def _on_progress(self, done: int, total: int, name: str) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.status.setText(f"Reading {name}…" if name else "Finishing…")

    def _on_done(self, entries: list[ModelEntry]) -> None:
        self.job = None
        self.rescan_button.setEnabled(True)
        self.progress.hide()
        broken = sum(1 for e in entries if e.broken)
        note = f" ({broken} cannot load: the Prompt format column says why)" if broken else ""
        found = sum(1 for e in entries if e.source != "chorus")
        self.show_entries(entries, (f"{found} models found in other apps' folders{note}." if found else
                                    f"No models in other apps' folders{note}: see below."))
        self.sig_scanned.emit(len(entries))

    def _on_failed(self, message: str) -> None:
        self.job = None
        self.rescan_button.setEnabled(True)
        self.progress.hide()
        self.status.setText(f"The scan failed: {message}")

    def show_entries(self, entries: list[ModelEntry], status: str = "") -> None:
        self.entries = entries
        sort = self.table.horizontalHeader().sortIndicatorSection(), self.table.horizontalHeader().sortIndicatorOrder()
        build_model(entries, self.settings.engine_fields(), self.model)
        self._mark_loaded()  # before the columns fit their contents: bold is wider
        self.proxy.sort(*sort)  # section -1: the scan's order (by source, then name)
        header = self.table.horizontalHeader()
        header.resizeSections(QHeaderView.ResizeToContents)
        for section in range(header.count() - 1):
            header.resizeSection(section, min(header.sectionSize(section), 260))
        places = looked_in(self._scan_kwargs, self._scan_kwargs.get("folders", self.settings.model_folders()))
        self.status.setText(status)
        self.status.setToolTip("Looked in:\n" + folders_text(places))
        empty = not any(e.source != "chorus" for e in entries)
        self.help.setText(help_html(entries, places) if empty else "")
        self.help.setVisible(empty)
        self._update_buttons()

    def _mark_loaded(self) -> None:
        """The row of the model loaded now, in bold."""
        for row in range(self.model.rowCount()):
            entry = self.model.item(row, 0).data(ENTRY_ROLE)
            if self.loaded and entry is not None and os.path.realpath(entry.path) == os.path.realpath(self.loaded):
                for column in range(self.model.columnCount()):
                    item = self.model.item(row, column)
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.model.item(row, 0).setToolTip("Loaded now" + (f"\n{t}" if (t := self.model.item(
                    row, 0).toolTip()) else ""))

    def open_file(self) -> None:
        """Choose any GGUF file and load it (`sig_load`)."""
        path, _ = QFileDialog.getOpenFileName(self, "Open a GGUF model", str(Path.home()),
                                              "GGUF models (*.gguf);;All files (*)")
        if path:
            self.sig_load.emit(path)

    def add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder with GGUF models", str(Path.home()))
        if folder:
            self.settings.set_model_folders(self.settings.model_folders() + [folder])
            self.rescan()

    def open_hub(self) -> None:
        dialog = self._hub_dialog(self)
        dialog.finished.connect(lambda _: self.rescan())
        if hasattr(dialog, "sig_downloaded"):  # a finished download shows up without closing the dialog
            dialog.sig_downloaded.connect(lambda _: self.rescan())
        dialog.show()

    # --- actions -----------------------------------------------------------------------------------------------
    def selected(self) -> ModelEntry | None:
        rows = self.table.selectionModel().selectedRows()
        return self.proxy.index(rows[0].row(), 0).data(ENTRY_ROLE) if rows else None

    def _update_buttons(self) -> None:
        entry = self.selected()
        usable = entry is not None and entry.broken is None
        self.load_button.setEnabled(usable)
        self.backend_button.setEnabled(usable)
        self.reveal_button.setEnabled(entry is not None)

    def load_selected(self) -> None:
        entry = self.selected()
        if entry is not None and entry.broken is None:
            self.sig_load.emit(entry.path)

    def add_selected(self) -> None:
        entry = self.selected()
        if entry is not None and entry.broken is None:
            self.sig_add_backend.emit(entry.path)

    def reveal_selected(self) -> None:
        entry = self.selected()
        if entry is not None:
            self.sig_reveal.emit(entry.path)
            self._reveal(entry.path)

    def select_row(self, name: str) -> bool:
        """Select the first visible row with this name (tests, and the hub dialog after a download)."""
        for row in range(self.proxy.rowCount()):
            if self.proxy.index(row, 0).data() == name:
                self.table.selectRow(row)
                return True
        return False

    def visible_names(self) -> list[str]:
        return [self.proxy.index(r, 0).data() for r in range(self.proxy.rowCount())]
