"""A pane's tools: OpenAI-style function definitions as JSON, tool_choice, parallel_tool_calls, call first (a
local model's reply starts with the call), the mock results that answer the calls (app/session/mocks.py) and
the calls expected (the comparison table's F1), checked as they are typed. The group's mock results have their
own editor below (app/ui/pane/group_mocks_editor.py).

The text is the pane's own (`PaneSpec.tools`) and is kept as written even while it does not check, so nothing
typed is lost; a run of a pane whose tools do not check submits nothing and shows the same message
(app/session/tools.py says what is checked).
"""

from __future__ import annotations

import json

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from app.engine.types import TOOL_CHOICES
from app.session import mocks, tools
from app.session.tools import PARALLEL_LABELS

PLACEHOLDER = ('[{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", '
               '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]')
MOCKS_PLACEHOLDER = ('{"get_weather": {"result": {"temp_c": 18}}}, or by arguments: '
                     '{"get_weather": {"cases": [{"when": {"city": "Paris"}, "result": ...}], "result": ...}}')
PARALLEL_TIP = ("parallel_tool_calls: several calls in one reply (on), one at most (off), or not sent (default: "
                "the backend's own default)")
CALL_FIRST_TIP = ("tool_call_first: with tool choice required or one function, the reply starts with the call (no "
                  "text before it), so that even a small model calls. Local models only: a server is sent nothing "
                  "and the pane's status says so. Off: llama-server's grammar, which lets text come first.")
EXAMPLE_MOCKS = '{"get_weather": {"result": {"temp_c": 18, "sky": "clear"}}}'
CHECK_DELAY_MS = 300  # wait for a pause in typing before checking


class ToolsOptions(QWidget):
    sig_changed = Signal()
    """The tools text or the choice changed (also while the text does not check: the pane keeps it)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.editor = QPlainTextEdit(placeholderText=PLACEHOLDER)
        self.editor.setFixedHeight(90)
        self.choice = QComboBox(editable=True, toolTip="auto, none, required, or the one function to call")
        self.choice.addItems(TOOL_CHOICES)
        self.parallel = QComboBox(toolTip=PARALLEL_TIP)
        for value, label in PARALLEL_LABELS.items():
            self.parallel.addItem(label, value)
        self.call_first = QCheckBox("Call first", toolTip=CALL_FIRST_TIP)
        self.problem = QLabel(objectName="toolsProblem", wordWrap=True)
        self.support = QLabel(objectName="toolsSupport", wordWrap=True, visible=False)  # set_support
        self.mocks_title = QLabel("<b>This pane's mock results</b> — for a tool, they take precedence over the "
                                  "group's", wordWrap=True, objectName="paneMocksTitle")
        self.mocks = QPlainTextEdit(placeholderText=MOCKS_PLACEHOLDER)
        self.mocks.setFixedHeight(60)
        self.expected = QLineEdit(placeholderText="Expected calls: get_weather, … (the table's F1)")
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Tool choice"))
        top.addWidget(self.choice, 1)
        top.addWidget(QLabel("Parallel calls", toolTip=PARALLEL_TIP))
        top.addWidget(self.parallel)
        top.addWidget(self.call_first)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.support)
        layout.addLayout(top)
        layout.addWidget(self.editor)
        for widget in (self.mocks_title, self.mocks, self.expected):
            layout.addWidget(widget)
        layout.addWidget(self.problem)
        self._timer = QTimer(self, singleShot=True, interval=CHECK_DELAY_MS)
        self._timer.timeout.connect(self.check)
        for editor in (self.editor, self.mocks, self.expected):
            editor.textChanged.connect(self._timer.start)
        self.choice.currentTextChanged.connect(lambda _text: self.check())
        self.parallel.currentIndexChanged.connect(lambda _index: self.sig_changed.emit())
        self.call_first.toggled.connect(lambda _on: self.sig_changed.emit())
        self.check(report=False)

    def load(self, text: str | None, choice: str | None, mock_text: str | None = None,
             expected: str | None = None) -> None:
        """Show these values (None: leave that editor as it is, so the echo of one field's edit never
        overwrites another editor that has not been committed yet)."""
        widgets = (self.editor, self.choice, self.mocks, self.expected)
        for widget in widgets:
            widget.blockSignals(True)
        for editor, value in ((self.editor, text), (self.mocks, mock_text)):
            if value is not None and editor.toPlainText() != value:
                editor.setPlainText(value)
        if expected is not None and self.expected.text() != expected:
            self.expected.setText(expected)
        if choice is not None:
            self.choice.setCurrentText(choice)
        for widget in widgets:
            widget.blockSignals(False)
        self.check(report=False)

    def load_example(self) -> None:
        """The example tool (get_weather) and a mock result for it, where the pane has none (keeps its choice)."""
        self.load(json.dumps(json.loads(PLACEHOLDER), indent=1), None, None if self.mocks.toPlainText().strip()
                  else EXAMPLE_MOCKS)
        self.sig_changed.emit()

    def set_support(self, text: str) -> None:
        """Whether and how the pane's model can call tools, in words ("" hides it)."""
        self.support.setText(text)
        self.support.setVisible(bool(text))

    def load_parallel(self, parallel: bool | None) -> None:
        """Show parallel_tool_calls (no sig_changed)."""
        self.parallel.blockSignals(True)
        self.parallel.setCurrentIndex(list(PARALLEL_LABELS).index(parallel))
        self.parallel.blockSignals(False)

    def parallel_value(self) -> bool | None:
        return self.parallel.currentData()

    def load_call_first(self, on: bool) -> None:
        """Show tool_call_first (no sig_changed)."""
        self.call_first.blockSignals(True)
        self.call_first.setChecked(on)
        self.call_first.blockSignals(False)

    def add_mcp_picker(self, picker: QWidget) -> None:
        """The pane's MCP tools, under its JSON-defined ones."""
        layout = self.layout()
        layout.insertWidget(layout.indexOf(self.editor) + 1, picker)

    def add_group_editor(self, editor: QWidget) -> None:
        """The group's mock results, below the pane's own (and its message)."""
        self.layout().addWidget(editor)

    def values(self) -> tuple[str, str]:
        """(tools text, tool_choice) as written."""
        return self.editor.toPlainText(), self.choice.currentText().strip() or "auto"

    def mock_values(self) -> tuple[str, str]:
        """(mock results text, expected calls) as written."""
        return self.mocks.toPlainText(), self.expected.text().strip()

    def check(self, report: bool = True) -> str | None:
        """The problem with the tools or mock results as written (shown under the editors), or None."""
        text, choice = self.values()
        try:
            found = tools.request_fields(text, choice, None).get("tools", ())
            mocks.parse_mocks(self.mocks.toPlainText(), tools.tool_names(list(found)))
            problem = None
        except (tools.ToolsError, mocks.MockError) as exc:
            found, problem = (), str(exc)
        names = ", ".join(t["function"]["name"] for t in found)
        self.call_first.setEnabled(choice not in ("auto", "none"))  # kept as set: it applies again when it can
        self.problem.setText(f"⚠ {problem}" if problem else (f"✓ {len(found)} tool(s): {names}" if found else ""))
        self.problem.setProperty("bad", bool(problem))
        self.problem.setStyleSheet("color: #b91c1c" if problem else "color: #047857")
        if report:
            self.sig_changed.emit()
        return problem


def support_text(tool_format: str) -> str:
    """The Tools section's line on the local model (ModelInfo.tool_format, e.g. "generic JSON format (this model's
    template has none)")."""
    return f"Tools: {tool_format}" if tool_format else ""


def server_support_text(backend: str) -> str:
    return f"Tools: as the server {backend} offers them (its chat template's tool-call format)"
