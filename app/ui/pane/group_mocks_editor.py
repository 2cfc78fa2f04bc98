"""The mock results of a pane's group, in the pane's Tools section: a view of `session.group_mocks[group]`.

The group's mocks are one value in the session, shown by every pane of the group and written through the
controller as they are typed (kept as written even while they do not check, so nothing typed is lost). They are
checked as typed against the tools of the group's panes; Continue refuses them with the same message
(app/session/tool_loop.py). A pane's own mock result for a tool takes precedence over the group's for that tool.
The editor is hidden for a pane in no group.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from app.session import PaneSpec, SessionController, tool_loop
from app.session.mocks import MockError, parse_mocks
from app.ui.pane.tools_options import CHECK_DELAY_MS

TITLE = ("<b>Group mock results</b> — for every pane of this group; a pane's own mock results for a tool take "
         "precedence over these")
PLACEHOLDER = ('The group\'s mock results, as a pane\'s: {"get_weather": {"result": {"temp_c": 18}}}, '
               'or by arguments: {"get_weather": {"cases": [{"when": {"city": "Paris"}, "result": ...}]}}')
BAD, GOOD = "color: #b91c1c", "color: #047857"


class GroupMocksEditor(QWidget):
    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.spec, self.controller = spec, controller
        self.title = QLabel(TITLE, wordWrap=True, objectName="groupMocksTitle")
        self.editor = QPlainTextEdit(placeholderText=PLACEHOLDER)
        self.editor.setFixedHeight(60)
        self.problem = QLabel(objectName="groupMocksProblem", wordWrap=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(2)
        for widget in (self.title, self.editor, self.problem):
            layout.addWidget(widget)
        self._timer = QTimer(self, singleShot=True, interval=CHECK_DELAY_MS)
        self._timer.timeout.connect(self.check)
        self.editor.textChanged.connect(self._typed)
        controller.session.events.group_mocks.connect(self._on_session)
        self.sync()
        self.check()

    def detach(self) -> None:
        """The pane leaves the session: stop listening to it."""
        self.controller.session.events.group_mocks.disconnect(self._on_session)
        self._timer.stop()

    def text(self) -> str:
        """The group's mock results as the session holds them ("" for none, or no group)."""
        group = self.spec.group
        return self.controller.session.group_mocks.get(group, "") if group is not None else ""

    def sync(self) -> None:
        """Show the group's mock results (hidden in no group); an editor already showing them is untouched.
        They are checked after a pause (a check parses every tool set of the group)."""
        self.setVisible(self.spec.group is not None)
        text = self.text()
        if self.editor.toPlainText() != text:
            self.editor.blockSignals(True)
            self.editor.setPlainText(text)
            self.editor.blockSignals(False)
        self._timer.start()

    def check(self) -> str | None:
        """The problem with the group's mock results (shown under the editor), or None."""
        group = self.controller.session.group(self.spec.group)
        names = tool_loop.group_tool_names(group)
        try:
            found = parse_mocks(self.editor.toPlainText(), names, owner="group")
        except MockError as exc:
            self.problem.setText(f"⚠ {exc}")
            self.problem.setStyleSheet(BAD)
            return str(exc)
        panes = f"the {len(group)} panes of this group" if len(group) > 1 else "this group's pane"
        self.problem.setText(f"✓ mock results for {', '.join(found)}, answering {panes}" if found else "")
        self.problem.setStyleSheet(GOOD)
        return None

    def _typed(self) -> None:
        if self.spec.group is not None:  # the session's change comes back to every editor of the group
            self.controller.set_group_mocks(self.spec.group, self.editor.toPlainText())

    def _on_session(self, _new, _old) -> None:
        self.sync()
