"""The window's MCP feature: the session's servers and calls (McpTools, McpCalls) linked to the GUI thread, the
Tools menu's *MCP servers…*, and the bar that asks before a session's servers start.

Built by the window with its controller and key store, before the panes (they offer the servers' tools): the
controller answers calls to MCP tools with McpTools (SessionController.use_mcp), the pump brings the hub's news
(answers, server states, tool lists) to the GUI thread, and the consent bar is refreshed whenever the session's
servers change (a file opened, a server added). Closing the window stops every server.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QWidget

from app.session import SessionController
from app.session.mcp_calls import McpCalls
from app.session.mcp_tools import McpTools
from app.ui.mcp.consent_bar import McpConsentBar
from app.ui.mcp.servers import ServerList
from app.ui.mcp.servers_dialog import McpServersDialog


class McpFeature(QObject):
    _sig_wake = Signal()
    """Emitted from the hub's thread when something arrived; queued to the GUI thread."""

    def __init__(self, controller: SessionController, keys, parent: QWidget):
        """`parent` owns the dialogs and the consent bar (the window places the bar, `bar`)."""
        super().__init__(parent)
        self.controller, self.parent_widget = controller, parent
        self.mcp = McpTools(controller.session, keys)
        controller.use_mcp(self.mcp)
        self.calls = McpCalls(self.mcp, controller, self._sig_wake.emit)
        controller.mcp_calls = self.calls
        self._sig_wake.connect(self.calls.pump)
        self.servers = ServerList(self.mcp, self.calls)
        self.bar = McpConsentBar(self.servers, parent)
        self.dialog: McpServersDialog | None = None
        controller.session.events.mcp_servers.connect(lambda *_: self.bar.refresh())
        self.calls.changed.connect(lambda pane_id: pane_id or self.bar.refresh())

    def build_menu(self, menu: QMenu) -> QAction:
        """Tools → MCP servers…"""
        self.bar.refresh()
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
