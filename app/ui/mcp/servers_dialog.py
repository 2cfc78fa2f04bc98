"""Tools → MCP servers…: the session's MCP servers, what each runs, where it stands, and how its calls are approved.

A view over the window's ServerList (app/ui/mcp/servers.py): each row is a server (its name, the exact command
line or URL, its status: stopped, starting, running with its tools, failed or crashed, and its approval mode);
the selected one's message and the tail of its stderr are shown under the table, as plain text. Add, Edit and Remove
change the session's servers (secrets to the keyring); Import lists the configurations other apps keep on this computer
(Claude Desktop, Cursor, LM Studio) and adds one's servers only when the user picks it and agrees to what they
run. Start, Stop and Restart go to the hub's thread: nothing here waits on a server.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.mcp import CRASHED, FAILED, MODE_LABELS, MODES, READY, STARTING, FoundConfig, discover
from app.session.mcp_calls import McpCalls
from app.ui.mcp.server_form import McpServerForm
from app.ui.mcp.servers import ServerList

STATUS_LABELS = {"stopped": "stopped", STARTING: "starting…", READY: "running", FAILED: "failed to start",
                 CRASHED: "crashed"}
COLUMNS = ("Server", "Runs", "Status", "Approval")


def status_text(state) -> str:
    label = STATUS_LABELS.get(state.status, state.status)
    return f"{label} ({len(state.tools)} tools)" if state.status == READY else label


def import_question(found: FoundConfig) -> str:
    """What importing `found` adds, each server with what it runs (plain text)."""
    lines = [f"• {s.name}: {s.launch}" for s in found.config.servers]
    return (f"Add the MCP servers of {found.label} ({found.path}) to this session?\n\n" + "\n".join(lines)
            + "\n\nNone of them starts until you press Start.")


class McpServersDialog(QDialog):
    def __init__(self, link: ServerList, calls: McpCalls, parent: QWidget | None = None, home=None):
        super().__init__(parent)
        self.link, self.calls, self.home = link, calls, home
        self.setWindowTitle("MCP servers")
        self.table = QTableWidget(0, len(COLUMNS), selectionBehavior=QAbstractItemView.SelectRows,
                                  selectionMode=QAbstractItemView.SingleSelection,
                                  editTriggers=QAbstractItemView.NoEditTriggers)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        for column in (2, 3):  # the status and the approval mode in full
            header.setSectionResizeMode(column, QHeaderView.ResizeToContents)
        self.table.verticalHeader().hide()
        self.empty = QLabel("No MCP servers yet. Add one, or import those another app uses.", objectName="mcpEmpty")
        self.detail = QPlainTextEdit(readOnly=True, objectName="mcpDetail", maximumHeight=130)  # plain text only
        self.add_button = QPushButton("Add…")
        self.import_button = QPushButton("Import…", toolTip="The MCP servers Claude Desktop, Cursor or LM Studio "
                                         "use on this computer (added only when you pick one)")
        self.import_menu = QMenu(self)
        self.import_button.setMenu(self.import_menu)
        self.import_menu.aboutToShow.connect(self._fill_import_menu)
        self.edit_button = QPushButton("Edit…")
        self.remove_button = QPushButton("Remove")
        self.start_button = QPushButton("Start")
        self.stop_button = QPushButton("Stop")
        self.restart_button = QPushButton("Restart")
        buttons = QVBoxLayout()
        for button in (self.add_button, self.import_button, self.edit_button, self.remove_button, self.start_button,
                       self.stop_button, self.restart_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        row = QHBoxLayout()
        row.addWidget(self.table, 1)
        row.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.addWidget(self.empty)
        layout.addLayout(row, 1)
        layout.addWidget(self.detail)
        self.resize(900, 420)
        self.add_button.clicked.connect(lambda: self.edit(None))
        self.edit_button.clicked.connect(lambda: self.edit(self.selected()))
        self.remove_button.clicked.connect(self.remove)
        self.start_button.clicked.connect(lambda: self._act(self.link.start))
        self.restart_button.clicked.connect(lambda: self._act(self.link.start))  # after a failure or a crash
        self.stop_button.clicked.connect(lambda: self._act(self.link.stop))
        self.table.itemSelectionChanged.connect(self._selection_changed)
        calls.changed.connect(self._link_changed)
        self.finished.connect(lambda _r: calls.changed.disconnect(self._link_changed))
        self.refresh()

    # ---- rendering -------------------------------------------------------------------------------------------
    def _link_changed(self, pane_id: str) -> None:
        if not pane_id:
            self.refresh()

    def refresh(self) -> None:
        names = self.link.names()
        launches = self.link.launches()
        chosen = self.selected()
        self.table.setRowCount(len(names))
        for row, name in enumerate(names):
            state = self.link.state(name)
            launch = launches.get(name) or self.link.problems.get(name, "")
            for column, text in enumerate((name, launch, status_text(state))):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.table.setItem(row, column, item)
            mode = QComboBox(toolTip="When a call to this server's tools may go ahead")
            for key in MODES:
                mode.addItem(MODE_LABELS[key], key)
            mode.setCurrentIndex(MODES.index(self.link.mode(name)))
            mode.currentIndexChanged.connect(lambda _i, n=name, box=mode: self.link.set_mode(n, box.currentData()))
            self.table.setCellWidget(row, 3, mode)
            if name == chosen:
                self.table.selectRow(row)
        self.table.resizeColumnToContents(0)
        self.empty.setVisible(not names)
        if self.selected() is None and names:
            self.table.selectRow(0)
        self._selection_changed()

    def selected(self) -> str | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        item = self.table.item(rows[0].row(), 0) if rows else None
        return item.text() if item is not None else None

    def _selection_changed(self) -> None:
        name = self.selected()
        state = self.link.state(name) if name else None
        status = state.status if state else None
        for button in (self.edit_button, self.remove_button):
            button.setEnabled(name is not None)
        self.start_button.setEnabled(status in ("stopped",))
        self.stop_button.setEnabled(status in (STARTING, READY))
        self.restart_button.setEnabled(status in (FAILED, CRASHED))
        self.detail.setPlainText(self.detail_text(name) if name else "")

    def detail_text(self, name: str) -> str:
        state = self.link.state(name)
        lines = [f"{name}: {status_text(state)}", f"Runs: {self.link.launches().get(name, '')}"]
        if state.message:
            lines.append(state.message)
        if state.stderr_tail:
            lines += ["Its stderr ends with:", state.stderr_tail]
        if state.tools:
            lines.append("Tools: " + ", ".join(t.name for t in state.tools))
        return "\n".join(lines)

    # ---- actions ---------------------------------------------------------------------------------------------
    def _act(self, action) -> None:
        name = self.selected()
        if name is None:
            return
        try:
            action(name)
        except (PermissionError, KeyError) as exc:
            self.detail.setPlainText(str(exc))

    def edit(self, name: str | None) -> McpServerForm:
        form = McpServerForm(self, name or "", self.link.session.mcp_servers.get(name) if name else None)
        form.accepted.connect(lambda: self._save(form, name))
        form.open()
        return form

    def _save(self, form: McpServerForm, previous: str | None) -> None:
        try:
            self.link.set_server(form.name.text().strip(), form.entry(), previous)
        except ValueError as exc:
            QMessageBox.warning(self, "MCP server", str(exc))

    def remove(self) -> None:
        name = self.selected()
        if name is not None:
            self.link.remove_server(name)

    def _fill_import_menu(self) -> None:
        self.import_menu.clear()
        found = discover(self.home) if self.home is not None else discover()
        for config in found:
            action = self.import_menu.addAction(f"{config.label}: {config.path}")
            if config.config is None:
                action.setEnabled(False)
                action.setToolTip(config.problem)
                continue
            action.triggered.connect(lambda _c=False, f=config: self.ask_import(f))
        if not found:
            self.import_menu.addAction("No other app's MCP configuration found").setEnabled(False)

    def ask_import(self, found: FoundConfig) -> QMessageBox:
        box = QMessageBox(QMessageBox.Question, "Import MCP servers", import_question(found),
                          QMessageBox.Yes | QMessageBox.Cancel, self)
        box.setTextFormat(Qt.PlainText)
        yes = box.button(QMessageBox.Yes)
        yes.setText("Add them")
        yes.clicked.connect(lambda: self.import_config(found))
        box.open()
        return box

    def import_config(self, found: FoundConfig) -> list[str]:
        """Add `found`'s servers (secrets to the keyring); the names added."""
        added = []
        for server in found.config.servers:
            self.link.set_server(server.name, server.to_json(with_secrets=True))
            added.append(server.name)
        return added
