"""The bar that asks before a session's MCP servers start.

A session file, an example or an evaluation may name MCP servers; opening it starts none of them. The bar lists
each server nobody has agreed to yet with exactly what starting it runs (the command line, or the URL), as plain
text, and offers *Start them* (the user agrees to these, as written) or *Not now* (the bar goes until the servers
change). A server whose command line changes is asked about again.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolBar, QWidget

from app.ui.mcp.servers import ServerList


class McpConsentBar(QToolBar):
    def __init__(self, link: ServerList, parent: QWidget | None = None):
        super().__init__("MCP servers to start", parent)
        self.setObjectName("mcpConsentBar")
        self.setMovable(False)
        self.link = link
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(6, 2, 6, 2)
        self.text = QLabel(objectName="mcpConsentText", wordWrap=True, textFormat=Qt.PlainText)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.start_button = QPushButton("Start them")
        self.later_button = QPushButton("Not now")
        row.addWidget(QLabel("⚠"))
        row.addWidget(self.text, 1)
        row.addWidget(self.start_button)
        row.addWidget(self.later_button)
        box.setStyleSheet("background: #fef3c7; color: #111827;")
        self.addWidget(box)
        self.start_button.clicked.connect(self.agree)
        self.later_button.clicked.connect(self.dismiss)
        self._dismissed: tuple = ()
        self.shown: list = []  # the configurations the bar asks about
        self.hide()

    def refresh(self) -> None:
        """Show the servers waiting for consent (hidden when none, or after Not now for the same ones)."""
        waiting = self.link.needs_consent()
        self.shown = waiting
        if not waiting or tuple(waiting) == self._dismissed:
            self.hide()
            return
        lines = [f"{name}: {launch}" for name, launch in waiting]
        self.text.setText("This session uses MCP servers that have not been started. Starting them runs:\n"
                          + "\n".join(lines))
        self.show()

    def agree(self) -> None:
        """Start the servers shown (as they were shown: a server changed since is asked about again)."""
        shown = set(self.shown)
        self.link.agree([name for name, launch in self.link.needs_consent() if (name, launch) in shown])
        self.refresh()

    def dismiss(self) -> None:
        self._dismissed = tuple(self.shown)
        self.hide()
