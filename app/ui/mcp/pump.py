"""McpPump: brings the MCP hub's news (calls answered, servers started, crashed, tool lists changed) to the GUI
thread. The link's `notify` is called from the hub's thread; a queued signal wakes this object, which pumps the
link on the GUI thread, where the session changes."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.session.mcp_link import McpLink


class McpPump(QObject):
    _sig_wake = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.link: McpLink | None = None
        self._sig_wake.connect(self.pump)

    def notify(self) -> None:
        """Safe from any thread."""
        self._sig_wake.emit()

    def pump(self) -> None:
        if self.link is not None:
            self.link.pump()
