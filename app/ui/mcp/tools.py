"""The window's MCP feature: the session's servers linked to the GUI thread, the Tools menu's *MCP servers…*, and
the bar that asks before a session's servers start.

Built by the window with its session, controller and key store: the McpLink it makes answers the panes' calls to
MCP tools (SessionController.attach_mcp), its pump brings the hub's news to the GUI thread, and the consent bar is
refreshed whenever the session's servers change (a file opened, a server added). Closing the window stops every
server.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QMenu

from app.session import SessionController
from app.session.mcp_link import McpLink
from app.ui.mcp.consent_bar import McpConsentBar
from app.ui.mcp.pump import McpPump
from app.ui.mcp.servers_dialog import McpServersDialog


class McpTools(QObject):
    def __init__(self, controller: SessionController, keys, window: QMainWindow, hub=None):
        super().__init__(window)
        self.controller, self.window = controller, window
        self.pump = McpPump(self)
        self.link = McpLink(controller.session, keys, self.pump.notify, hub)
        self.pump.link = self.link
        controller.attach_mcp(self.link)
        self.bar = McpConsentBar(self.link, window)
        self.dialog: McpServersDialog | None = None
        controller.session.events.mcp_servers.connect(self._servers_changed)
        self.link.changed.connect(lambda pane_id: pane_id or self.bar.refresh())
        self.bar.refresh()

    def build_menu(self, menu: QMenu) -> QAction:
        """Tools → MCP servers…, and the consent bar under the window's toolbar (built by now)."""
        self.window.addToolBarBreak(Qt.TopToolBarArea)
        self.window.addToolBar(Qt.TopToolBarArea, self.bar)
        self.bar.refresh()
        self.act_servers = QAction("MCP servers…", menu)
        self.act_servers.setStatusTip("The MCP servers whose tools panes can call: add, import, start, approvals")
        self.act_servers.triggered.connect(self.open_servers)
        menu.addAction(self.act_servers)
        return self.act_servers

    def open_servers(self) -> McpServersDialog:
        if self.dialog is None or not self.dialog.isVisible():
            self.dialog = McpServersDialog(self.link, self.window)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def _servers_changed(self, *_args) -> None:
        self.link.sync_servers()
        self.bar.refresh()

    def close(self) -> None:
        self.link.close()
