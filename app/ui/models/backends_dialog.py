"""Model → Backends…: every backend panes can run on — the main model, more local models, servers — with
buttons to add, reconnect and remove them.

Adding opens a model or asks a server for its models off the GUI thread; the dialog stays usable and says in
its status line what happened. Removing a backend stops its running panes (their runs end "cancelled").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.backends.registry import MAIN, BackendSpec
from app.ui.models.backend_manager import BackendManager
from app.ui.models.server_form import ServerForm

COLUMNS = ("Name", "Kind", "Where", "Status")


class BackendsDialog(QDialog):
    def __init__(self, manager: BackendManager, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Backends")
        self.manager = manager
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.Stretch)
        self.add_local_button = QPushButton("Add local model…", toolTip="Another GGUF file, with its own engine")
        self.add_server_button = QPushButton("Add server…", toolTip="llama-server, vLLM, Ollama or any "
                                                                   "OpenAI-compatible server")
        self.reconnect_button = QPushButton("Reconnect")
        self.remove_button = QPushButton("Remove", toolTip="Stops the panes running on it")
        self.close_button = QPushButton("Close")
        self.status = QLabel(objectName="backendsStatus", wordWrap=True)
        buttons = QHBoxLayout()
        for button in (self.add_local_button, self.add_server_button, self.reconnect_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Each pane picks one of these in its header; a sweep can run one prompt on "
                                "several (Compare → Variants and sweeps…)."))
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self.resize(760, 320)
        self.add_local_button.clicked.connect(self.choose_local_model)
        self.add_server_button.clicked.connect(self.open_server_form)
        self.reconnect_button.clicked.connect(lambda: asyncio.ensure_future(self._reconnect()))
        self.remove_button.clicked.connect(lambda: asyncio.ensure_future(self._remove()))
        self.close_button.clicked.connect(self.accept)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        manager.sig_changed.connect(self.refresh)
        self.refresh()

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(name, kind, where, status) for the main model, every open backend and every saved one not open."""
        return self.manager.listing()

    def refresh(self) -> None:
        rows = self.rows()
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self._update_buttons()

    def selected_name(self) -> str | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self.table.item(rows[0].row(), 0).text() if rows else None

    def _update_buttons(self) -> None:
        name = self.selected_name()
        self.remove_button.setEnabled(name is not None and name != MAIN)
        self.reconnect_button.setEnabled(name in self.manager.unavailable)

    def choose_local_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Add a local model", str(Path.home()),
                                              "GGUF models (*.gguf);;All files (*)")
        if path:
            asyncio.ensure_future(self.add(BackendSpec(kind="local", path=path)))

    def open_server_form(self) -> None:
        self.server_form = ServerForm(self.manager.keys, self)
        self.server_form.accepted.connect(lambda: asyncio.ensure_future(
            self.add(self.server_form.spec(), self.server_form.key(), self.server_form.remember.isChecked())))
        self.server_form.open()

    async def add(self, spec: BackendSpec, api_key: str | None = None, remember: bool = False) -> str | None:
        """Open a backend; the status line says how it went. Returns None or the reason it failed."""
        self.status.setText(f"Opening {spec.name}…")
        reason = await self.manager.add(spec, api_key, remember)
        self.status.setText(f"⚠ Could not open {spec.name}: {reason}" if reason
                            else f"Added {self.manager.last_added}.")
        return reason

    async def _reconnect(self) -> None:
        if name := self.selected_name():
            self.status.setText(f"Connecting {name}…")
            reason = await self.manager.reconnect(name)
            self.status.setText(f"⚠ {name}: {reason}" if reason else f"Connected {name}.")

    async def _remove(self) -> None:
        if (name := self.selected_name()) and name != MAIN:
            await self.manager.remove(name)
            self.status.setText(f"Removed {name}.")
