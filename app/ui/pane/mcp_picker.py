"""A pane's MCP tools: which servers (all their tools) or single tools it offers beside its JSON-defined ones, and
whether its calls always go to the server (*Live calls*) instead of replaying the group's recorded answers.

A view over `PaneSpec.mcp` / `mcp_live` and the session's McpTools (SessionController.mcp, its calls' news in
SessionController.mcp_calls): the menu lists the
session's servers, each with its tools as they are now (a server that is not running has none to list yet); the
line under it names the functions the pane offers, each with its server and description, its input schema in the
tooltip, all as plain text. It follows the servers' tool lists as they change.
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QMenu, QToolButton, QVBoxLayout, QWidget

from app.mcp import toolset
from app.session import PaneSpec, SessionController

LIVE_TIP = ("Live for every pane: each call of this pane's group goes to its server. Off (the default): a call "
            "with the same tool and arguments that another pane of the group already made is answered with that "
            "recorded result, marked replayed, so a tool with side effects runs once")


class McpPicker(QWidget):
    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec, self.controller = spec, controller
        self.choose = QToolButton(text="MCP tools…", popupMode=QToolButton.InstantPopup,
                                  toolTip="Offer the tools of MCP servers (Tools → MCP servers… lists them)")
        self.menu = QMenu(self.choose)
        self.choose.setMenu(self.menu)
        self.menu.aboutToShow.connect(self._fill_menu)
        self.live = QCheckBox("Live calls", toolTip=LIVE_TIP)
        self.offered = QLabel(objectName="mcpOffered", wordWrap=True, textFormat=Qt.PlainText)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.choose)
        row.addWidget(self.live)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(row)
        layout.addWidget(self.offered)
        self.live.toggled.connect(self._live_toggled)
        self._signals = [spec.events.mcp, spec.events.mcp_live, spec.events.tools]
        for signal in self._signals:
            signal.connect(self.sync)
        if controller.mcp_calls is not None:
            controller.mcp_calls.changed.connect(self._link_changed)
        self.sync()

    def detach(self) -> None:
        """The pane leaves the session: stop listening (the widget is about to be deleted)."""
        for signal in self._signals:
            signal.disconnect(self.sync)
        if self.controller.mcp_calls is not None:
            self.controller.mcp_calls.changed.disconnect(self._link_changed)

    def _link_changed(self, pane_id: str) -> None:
        if not pane_id:
            self.sync()

    def _live_toggled(self, on: bool) -> None:
        """Live calls for every pane of the group (replay is within a group: it is the group's choice)."""
        for pane in self.controller.session.group(self.spec.group) or [self.spec]:
            pane.mcp_live = on

    def toggle(self, item: str, on: bool) -> None:
        """Offer (or stop offering) a server ("name") or one tool ("name/tool")."""
        chosen = [i for i in self.spec.mcp if i != item]
        servers = self._servers()
        server, tool = toolset.split_entry(item, servers)
        if on and not tool:  # the whole server replaces its single tools
            chosen = [i for i in chosen if toolset.split_entry(i, servers)[0] != server]
        self.spec.mcp = tuple([*chosen, item] if on else chosen)

    def _servers(self) -> list[str]:
        mcp = self.controller.mcp
        return list(mcp.session.mcp_servers) if mcp is not None else []

    def _fill_menu(self) -> None:
        self.menu.clear()
        mcp, calls = self.controller.mcp, self.controller.mcp_calls
        names = list(mcp.session.mcp_servers) if mcp is not None else []
        if not names:
            self.menu.addAction("No MCP servers: add one under Tools → MCP servers…").setEnabled(False)
            return
        for name in names:
            whole = name in self.spec.mcp
            action = self.menu.addAction(f"{name} (all its tools)")
            action.setCheckable(True)
            action.setChecked(whole)
            action.toggled.connect(lambda on, n=name: self.toggle(n, on))
            tools = mcp.hub.tools([name]) if mcp.hub is not None else []
            if not tools:
                status = calls.state(name).status if calls is not None else "stopped"
                self.menu.addAction(f"    {name} is {status}: its tools show once it runs").setEnabled(False)
            for tool in tools:
                item = f"{name}/{tool.name}"
                one = self.menu.addAction(f"    {tool.name}")
                one.setCheckable(True)
                one.setChecked(whole or item in self.spec.mcp)
                one.setEnabled(not whole)
                one.setToolTip(tool.description)
                one.toggled.connect(lambda on, i=item: self.toggle(i, on))
            self.menu.addSeparator()

    def sync(self, *_args) -> None:
        spec, mcp = self.spec, self.controller.mcp
        self.live.blockSignals(True)
        self.live.setChecked(spec.mcp_live)
        self.live.blockSignals(False)
        if not spec.mcp:
            self.offered.setText("")
            self.offered.setVisible(False)
            return
        routes = mcp.tools_for(spec).routes if mcp is not None else {}
        lines = [f"{function} ({tool.server}): {tool.description}" if tool.description else
                 f"{function} ({tool.server})" for function, tool in routes.items()]
        servers = self._servers()
        waiting = [i for i in spec.mcp
                   if not any(t.server == toolset.split_entry(i, servers)[0] for t in routes.values())]
        lines += [f"{item}: not running, its tools show once it runs" for item in waiting]
        self.offered.setText("\n".join(lines))
        self.offered.setToolTip("\n\n".join(f"{f}: {json.dumps(t.input_schema, indent=1)}" for f, t in routes.items()))
        self.offered.setVisible(True)
