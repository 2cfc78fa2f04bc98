"""A pane's reasoning: the thinking switch and budget (settings), and the "Thinking" section that streams a
reasoning model's thinking apart from its answer, then folds once the answer starts.

Both render the pane's spec and keep nothing of its own but how much of `result.reasoning` is on screen: the
text itself is always read from the result.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine import limits
from app.session import PaneSpec, RunState

CHOICES = (("Model default", None), ("On", True), ("Off", False))
NO_CAP = -1  # the budget box's "no cap" value


class ThinkingSettings(QWidget):
    """Thinking on/off/default and the budget of thinking tokens. `read()` -> (thinking, budget)."""

    sig_changed = Signal()
    """The user changed the switch or the budget."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.mode = QComboBox(toolTip="Whether a reasoning model thinks before it answers (its chat template's "
                                      "enable_thinking); other models ignore it")
        for label, value in CHOICES:
            self.mode.addItem(label, value)
        self.budget = QSpinBox(minimum=NO_CAP, maximum=int(limits.THINKING_BUDGET.high), specialValueText="no cap",
                               toolTip="Most thinking tokens: then the thinking is closed and the answer follows")
        self.budget.setValue(NO_CAP)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        for widget in (QLabel("Thinking"), self.mode, QLabel("budget"), self.budget):
            row.addWidget(widget)
        row.addStretch(1)
        self.mode.currentIndexChanged.connect(self.sig_changed)
        self.budget.valueChanged.connect(self.sig_changed)

    def read(self) -> tuple[bool | None, int | None]:
        budget = self.budget.value()
        return self.mode.currentData(), None if budget == NO_CAP else budget

    def load(self, thinking: bool | None, budget: int | None) -> None:
        """Show these values (no sig_changed)."""
        self.blockSignals(True)
        try:
            self.mode.setCurrentIndex(next(i for i, (_, value) in enumerate(CHOICES) if value is thinking))
            self.budget.setValue(NO_CAP if budget is None else budget)
        finally:
            self.blockSignals(False)


class ThinkingView(QWidget):
    """Hidden until a run has thinking; open while the model thinks, folded once the answer streams (the user's
    own toggle wins until the next run)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("thinkingView")
        self.toggle = QToolButton(objectName="sectionToggle", checkable=True, accessibleName="Show the thinking")
        self.toggle.setToolButtonStyle(Qt.ToolButtonTextBesideIcon)
        self.text = QPlainTextEdit(readOnly=True, objectName="thinkingText", tabChangesFocus=True)
        self.text.setAccessibleName("Thinking")
        self.text.setMaximumHeight(120)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.toggle)
        layout.addWidget(self.text)
        self._result = None  # the result on screen (identity only), and how much of its thinking is shown
        self._shown = 0
        self._user_choice: bool | None = None
        self.toggle.clicked.connect(self._clicked)
        self.setVisible(False)

    def _clicked(self, checked: bool) -> None:
        self._user_choice = checked
        self._fold(checked)

    def _fold(self, expanded: bool) -> None:
        self.toggle.setChecked(expanded)
        self.toggle.setArrowType(Qt.DownArrow if expanded else Qt.RightArrow)
        self.text.setVisible(expanded)

    def sync(self, spec: PaneSpec) -> None:
        """Show the spec's result's thinking: append what arrived since the last sync (or all of it, for a new
        result), and say how long it is."""
        result = spec.result
        if result is not self._result:
            self._result, self._shown, self._user_choice = result, 0, None
            self.text.clear()
        thought = result.reasoning
        self.setVisible(bool(thought))
        if not thought:
            return
        if len(thought) < self._shown:  # replaced by the final, trimmed text
            self.text.setPlainText(thought)
        elif len(thought) > self._shown:
            cursor = self.text.textCursor()
            cursor.movePosition(cursor.MoveOperation.End)
            cursor.insertText(thought[self._shown:])
        self._shown = len(thought)
        thinking_now = result.busy and not result.text.strip()
        self.toggle.setText(self.caption(spec))
        self._fold(self._user_choice if self._user_choice is not None else thinking_now)

    @staticmethod
    def caption(spec: PaneSpec) -> str:
        result = spec.result
        if result.busy and not result.text.strip():
            return "Thinking…"
        parts = ["Thinking"]
        if result.reasoning_tokens:
            parts.append(f"{result.reasoning_tokens} tok")
        if result.answer_ttft_s is not None:
            parts.append(f"answer after {result.answer_ttft_s:.2f} s")
        elif result.state in (RunState.DONE, RunState.CANCELLED) and not result.text.strip():
            parts.append("no answer (the thinking never closed)")
        return " · ".join(parts)
