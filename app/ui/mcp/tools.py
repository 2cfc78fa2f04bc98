"""The window's MCP feature: the session's servers and calls (McpTools, McpCalls) linked to the GUI thread, the
Tools menu's *MCP servers…*, and the question, on the window's consent bar, before a session's servers start.

Built by the window with its controller and key store, before the panes (they offer the servers' tools): the
controller answers calls to MCP tools with McpTools (SessionController.use_mcp), the pump brings the hub's news
(answers, server states, tool lists) to the GUI thread, and the question on the consent bar
(app/ui/widgets/consent_bar.py) follows the session's servers (a file opened, a server added): *Start them* starts
those shown, as shown; *Not now* leaves them until they change. Closing the window stops every server.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from app.session import SessionController
from app.session.consent import MCP, Ask, ConsentLedger
from app.session.mcp_calls import McpCalls
from app.session.mcp_tools import McpTools
from app.ui.mcp.servers import ServerList, line
from app.ui.mcp.servers_dialog import McpServersDialog
from app.ui.widgets.consent_bar import ConsentBar


class McpFeature(QObject):
    _sig_wake = Signal()
    """Emitted from the hub's thread when something arrived; queued to the GUI thread."""

    def __init__(self, controller: SessionController, keys, bar: ConsentBar, consent: ConsentLedger,
                 parent: QWidget):
        """`bar` asks before servers start, `consent` keeps what was agreed (the window's, shared with its other
        askers); `parent` owns the dialogs."""
        super().__init__(parent)
        self.controller, self.parent_widget = controller, parent
        self.mcp = McpTools(controller.session, keys)
        controller.use_mcp(self.mcp)
        self.calls = McpCalls(self.mcp, controller, self._sig_wake.emit)
        controller.mcp_calls = self.calls
        self._sig_wake.connect(self.calls.pump)
        self.servers = ServerList(self.mcp, self.calls, consent)
        self.bar = bar
        self._not_now: tuple = ()  # the servers shown when the user said Not now
        self.dialog: McpServersDialog | None = None
        controller.session.events.mcp_servers.connect(lambda *_: self.ask())
        self.calls.changed.connect(lambda pane_id: pane_id or self.ask())

    def ask(self) -> None:
        """Ask about the servers waiting for consent (nothing when none, or after Not now for the same ones)."""
        waiting = tuple(self.servers.needs_consent())
        if not waiting or waiting == self._not_now:
            self.bar.withdraw(MCP)
            return
        self.bar.ask(Ask(MCP, "This session uses MCP servers that have not been started. Starting them runs:",
                         tuple(line(name, launch) for name, launch in waiting), "Start them",
                         on_agree=lambda: self._agree(waiting), on_later=lambda: self._later(waiting)))

    def _agree(self, shown: tuple) -> None:
        """Start the servers shown, as they were shown (a server changed since is asked about again)."""
        self.servers.agree([name for name, launch in self.servers.needs_consent() if (name, launch) in shown])
        self.ask()

    def _later(self, shown: tuple) -> None:
        self._not_now = shown

    def build_menu(self, menu: QMenu) -> QAction:
        """Tools → MCP servers…"""
        self.ask()
        self.act_servers = QAction("MCP servers…", menu)
        self.act_servers.setStatusTip("The MCP servers whose tools panes can call: add, import, start, approvals")
        self.act_servers.triggered.connect(self.open_servers)
        menu.addAction(self.act_servers)
        return self.act_servers

    def open_servers(self) -> McpServersDialog:
        if self.dialog is None or not self.dialog.isVisible():
            self.dialog = McpServersDialog(self.servers, self.calls, self.parent_widget)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def close(self) -> None:
        self.mcp.close()
