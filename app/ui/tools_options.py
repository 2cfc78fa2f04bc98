"""A pane's tools: OpenAI-style function definitions as JSON, and tool_choice, checked as they are typed.

The text is the pane's own (`PaneSpec.tools`) and is kept as written even while it does not check, so nothing
typed is lost; a run of a pane whose tools do not check submits nothing and shows the same message
(app/session/tools.py says what is checked).
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from app.engine.types import TOOL_CHOICES
from app.session import tools

PLACEHOLDER = ('[{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", '
               '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]')
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
        self.problem = QLabel(objectName="toolsProblem", wordWrap=True)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(QLabel("Tool choice"))
        top.addWidget(self.choice, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.editor)
        layout.addWidget(self.problem)
        self._timer = QTimer(self, singleShot=True, interval=CHECK_DELAY_MS)
        self._timer.timeout.connect(self.check)
        self.editor.textChanged.connect(self._timer.start)
        self.choice.currentTextChanged.connect(lambda _text: self.check())
        self.check(report=False)

    def load(self, text: str, choice: str) -> None:
        for widget in (self.editor, self.choice):
            widget.blockSignals(True)
        if self.editor.toPlainText() != text:
            self.editor.setPlainText(text)
        self.choice.setCurrentText(choice)
        for widget in (self.editor, self.choice):
            widget.blockSignals(False)
        self.check(report=False)

    def values(self) -> tuple[str, str]:
        """(tools text, tool_choice) as written."""
        return self.editor.toPlainText(), self.choice.currentText().strip() or "auto"

    def check(self, report: bool = True) -> str | None:
        """The problem with the tools as written (shown under the editor), or None."""
        text, choice = self.values()
        try:
            found = tools.request_fields(text, choice, None).get("tools", ())
            problem = None
        except tools.ToolsError as exc:
            found, problem = (), str(exc)
        names = ", ".join(t["function"]["name"] for t in found)
        self.problem.setText(f"⚠ {problem}" if problem else (f"✓ {len(found)} tool(s): {names}" if found else ""))
        self.problem.setProperty("bad", bool(problem))
        self.problem.setStyleSheet("color: #b91c1c" if problem else "color: #047857")
        if report:
            self.sig_changed.emit()
        return problem
