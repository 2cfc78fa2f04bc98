"""Download from Hugging Face…: search GGUF repos, pick a file (the one that fits memory best is marked),
download it into the hub cache with progress and speed; Cancel keeps the partial file, and downloading the same
file again resumes it. All hub calls run off the GUI thread (app.models.hub); failures show as text."""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.models import hub
from app.models.fit import available_ram, size_label
from app.ui.settings import Settings


class HubJob(QObject):
    """Runs one hub call in a thread; results arrive on the GUI thread (queued signals)."""

    sig_result = Signal(str, object)  # (what, result)
    sig_failed = Signal(str, str)  # (what, message)
    sig_progress = Signal(int, int, float)  # done bytes, total bytes, bytes per second

    def run(self, what: str, call: Callable[[], object]) -> None:
        def work():
            try:
                result = call()
            except hub.DownloadCancelled:
                self.sig_failed.emit(what, "cancelled")
            except Exception as exc:  # HubError's message is for the user; anything else is shown too
                self.sig_failed.emit(what, str(exc) or type(exc).__name__)
            else:
                self.sig_result.emit(what, result)

        threading.Thread(target=work, name=f"chorus-hub-{what}", daemon=True).start()


class HubDialog(QDialog):
    sig_downloaded = Signal(str)
    """A download finished: the local path of the model (its first shard)."""

    def __init__(self, settings: Settings, parent: QWidget | None = None,
                 memory: Callable[[], int] = available_ram):
        super().__init__(parent)
        self.setWindowTitle("Download from Hugging Face")
        self.resize(900, 560)
        self.settings, self._memory = settings, memory
        self.files: list[hub.HubFile] = []
        self._fetch: str | None = None  # a file to download as soon as its repo is listed (fetch)
        self.cancel = threading.Event()
        self.job = HubJob()  # parentless: a thread may outlive the dialog
        self.job.sig_result.connect(self._on_result)
        self.job.sig_failed.connect(self._on_failed)
        self.job.sig_progress.connect(self._on_progress)
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.query = QLineEdit(placeholderText="Search GGUF models, e.g. qwen3 0.6b", clearButtonEnabled=True)
        self.query.returnPressed.connect(self.search)
        self.search_button = QPushButton("Search", clicked=self.search)
        row.addWidget(self.query, 1)
        row.addWidget(self.search_button)
        layout.addLayout(row)
        panes = QHBoxLayout()
        self.repos = QListWidget(objectName="hubRepos")
        self.repos.currentTextChanged.connect(self.list_files)
        self.table = QTableWidget(0, 4, objectName="hubFiles")
        self.table.setHorizontalHeaderLabels(["File", "Quantization", "Size", "Fits"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        panes.addWidget(self.repos, 2)
        panes.addWidget(self.table, 3)
        layout.addLayout(panes, 1)
        bottom = QHBoxLayout()
        self.progress = QProgressBar(textVisible=True, minimumWidth=220, maximumWidth=260)
        self.progress.hide()
        self.status = QLabel(objectName="hubStatus", wordWrap=True)
        self.download_button = QPushButton("Download", clicked=self.download)
        self.cancel_button = QPushButton("Cancel download", clicked=self.cancel.set, enabled=False)
        for widget in (self.progress, self.status):
            bottom.addWidget(widget, 1 if widget is self.status else 0)
        for button in (self.cancel_button, self.download_button, QPushButton("Close", clicked=self.close)):
            bottom.addWidget(button)
        layout.addLayout(bottom)

    def search(self) -> None:
        self.status.setText("Searching…")
        self.search_button.setEnabled(False)
        query = self.query.text().strip()
        self.job.run("search", lambda: hub.search(query))

    def list_files(self, repo_id: str) -> None:
        if repo_id:
            self.status.setText(f"Listing {repo_id}…")
            memory = self._memory()
            self.job.run("files", lambda: (repo_id, hub.mark_best(hub.files(repo_id), memory), memory))

    def fetch(self, repo_id: str, filename: str) -> None:
        """Download one named file of a repo (an offer elsewhere named it): its listing first, then the file."""
        self._fetch = filename
        self.query.setText(repo_id)
        self.repos.clear()
        self.repos.addItem(repo_id)
        self.repos.setCurrentRow(0)  # -> list_files; _on_result downloads the file once it is listed

    def selected(self) -> hub.HubFile | None:
        rows = self.table.selectionModel().selectedRows()
        return self.files[rows[0].row()] if rows else None

    def download(self) -> None:
        file = self.selected()
        if file is None:
            self.status.setText("Choose a file first.")
            return
        self.cancel.clear()
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.show()
        self.status.setText(f"Downloading {file.filename}…")
        self.job.run("download", lambda: hub.download(file, self.job.sig_progress.emit, self.cancel))

    def _on_progress(self, done: int, total: int, speed: float) -> None:
        self.progress.setValue(int(1000 * done / total) if total else 0)
        self.progress.setFormat(f"{size_label(done)} of {size_label(total)}")
        self.status.setText(f"Downloading… {size_label(int(speed))}/s" if speed else "Downloading…")

    def _on_result(self, what: str, result) -> None:
        if what == "search":
            self.search_button.setEnabled(True)
            self.repos.clear()
            self.repos.addItems([r.repo_id for r in result])
            self.status.setText(f"{len(result)} repositories" if result else "No GGUF repository matches.")
        elif what == "files":
            repo_id, self.files, memory = result
            self._show_files(memory)
            self.status.setText(f"{len(self.files)} models in {repo_id}; {size_label(memory)} of RAM free.")
            wanted, self._fetch = self._fetch, None
            row = next((i for i, f in enumerate(self.files) if f.filename == wanted), None)
            if row is not None:
                self.table.selectRow(row)
                self.download()
            elif wanted:
                self.status.setText(f"{wanted} is not in {repo_id} any more: choose another file.")
        else:
            self._download_ended(f"Downloaded to {result}")
            self.sig_downloaded.emit(str(result))

    def _show_files(self, memory: int) -> None:
        self.table.setRowCount(len(self.files))
        for row, f in enumerate(self.files):
            fits = "★ best fit" if f.best else ("yes" if hub.needed(f) <= memory else "too big")
            name = f.filename + (f"  (+{len(f.files) - 1} shards)" if len(f.files) > 1 else "")
            for col, text in enumerate((name, f.quantization, size_label(f.size), fits)):
                item = QTableWidgetItem(text)
                if f.best:
                    item.setData(Qt.FontRole, _bold(item))
                self.table.setItem(row, col, item)
            if f.best:
                self.table.selectRow(row)
        self.table.resizeColumnsToContents()

    def _on_failed(self, what: str, message: str) -> None:
        if what == "search":
            self.search_button.setEnabled(True)
        if what == "download":
            self._download_ended("Cancelled: downloading it again resumes where it stopped." if message == "cancelled"
                                 else f"Download failed: {message}")
        else:
            self.status.setText(message)

    def _download_ended(self, text: str) -> None:
        self.download_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.hide()
        self.status.setText(text)

    def closeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self.cancel.set()  # a running download stops; its partial file stays for next time
        super().closeEvent(event)


def _bold(item: QTableWidgetItem):
    font = item.font()
    font.setBold(True)
    return font
