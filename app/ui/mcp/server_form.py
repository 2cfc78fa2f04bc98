"""Add or edit an MCP server: a name, and either the command that starts a local one (with its environment) or
the URL of a remote one (with its headers). The form gives an `mcpServers` entry, checked as the configuration
files are (app/mcp/config.py); the values of the environment and the headers are secrets: they go to the keyring,
never into the session (McpLink.set_server).
"""

from __future__ import annotations

import shlex

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from app.mcp import parse_server

LOCAL, REMOTE = "Local command (stdio)", "Remote URL (Streamable HTTP or SSE)"


def pairs_text(values: dict[str, str], sep: str) -> str:
    return "\n".join(f"{k}{sep}{v}" for k, v in values.items())


def parse_pairs(text: str, sep: str, what: str) -> dict[str, str]:
    """`KEY=VALUE` (or `Name: value`) lines as a dict; raises ValueError naming the line."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, found, value = line.partition(sep)
        if not found or not key.strip():
            raise ValueError(f"{what}, line {number}: write it as NAME{sep}{' ' if sep == ':' else ''}VALUE")
        out[key.strip()] = value.strip()
    return out


class McpServerForm(QDialog):
    def __init__(self, parent: QWidget | None = None, name: str = "", entry: dict | None = None):
        super().__init__(parent)
        self.setWindowTitle("Edit MCP server" if entry else "Add MCP server")
        self.name = QLineEdit(name, placeholderText="files")
        self.kind = QComboBox()
        self.kind.addItems([LOCAL, REMOTE])
        self.command = QLineEdit(placeholderText="npx -y @modelcontextprotocol/server-filesystem /tmp")
        self.env = QPlainTextEdit(placeholderText="API_KEY=… (one per line; kept in the keyring)")
        self.env.setFixedHeight(60)
        self.url = QLineEdit(placeholderText="http://127.0.0.1:8000/mcp")
        self.headers = QPlainTextEdit(placeholderText="Authorization: Bearer … (one per line; kept in the keyring)")
        self.headers.setFixedHeight(60)
        self.problem = QLabel(objectName="mcpFormProblem", wordWrap=True)
        self.problem.setStyleSheet("color: #b91c1c")
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Save" if entry else "Add")
        form = QFormLayout(self)
        form.addRow("Name", self.name)
        form.addRow("Kind", self.kind)
        form.addRow("Command", self.command)
        form.addRow("Environment", self.env)
        form.addRow("URL", self.url)
        form.addRow("Headers", self.headers)
        form.addRow(self.problem)
        form.addRow(self.buttons)
        self.setMinimumWidth(560)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        if entry:
            self.load(entry)
        self._kind_changed()

    def load(self, entry: dict) -> None:
        remote = "url" in entry
        self.kind.setCurrentIndex(1 if remote else 0)
        self.command.setText(shlex.join([entry.get("command", ""), *entry.get("args", ())]) if not remote else "")
        self.env.setPlainText(pairs_text(entry.get("env") or {}, "="))
        self.url.setText(entry.get("url", ""))
        self.headers.setPlainText(pairs_text(entry.get("headers") or {}, ": "))

    def _kind_changed(self) -> None:
        remote = self.kind.currentIndex() == 1
        layout: QFormLayout = self.layout()
        for widget, show in ((self.command, not remote), (self.env, not remote), (self.url, remote),
                             (self.headers, remote)):
            layout.setRowVisible(widget, show)

    def entry(self) -> dict:
        """The `mcpServers` entry the form describes; raises ValueError saying what is wrong."""
        if self.kind.currentIndex() == 1:
            entry: dict = {"url": self.url.text().strip()}
            headers = parse_pairs(self.headers.toPlainText(), ":", "Headers")
            if headers:
                entry["headers"] = headers
        else:
            try:
                words = shlex.split(self.command.text())
            except ValueError as exc:
                raise ValueError(f"Command: {exc}") from exc
            if not words:
                raise ValueError("Command: type the command that starts the server")
            entry = {"command": words[0], "args": words[1:]}
            env = parse_pairs(self.env.toPlainText(), "=", "Environment")
            if env:
                entry["env"] = env
        parsed = parse_server(self.name.text().strip(), entry)
        if isinstance(parsed, str):
            raise ValueError(parsed)
        return entry

    def _accept(self) -> None:
        try:
            self.entry()
        except ValueError as exc:
            self.problem.setText(f"⚠ {exc}")
            return
        self.accept()
