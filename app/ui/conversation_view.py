"""A pane's conversation: user and assistant turns told apart, the reply streaming in at the end.

Streaming only appends at the end (one insert per flush); the whole conversation is re-rendered only when its
turns change. Text arriving while the view is scrolled out of sight is collected and inserted once it is seen
or the run ends: with 16 panes streaming, laying out text nobody can see cost the model CPU time.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QSizePolicy, QWidget

from app.session import PaneSpec, RunState

ROLE_LABELS = {"user": "You", "assistant": "Assistant"}
ROLE_COLORS = {"user": QColor("#2563eb"), "assistant": QColor("#059669")}


def _header_format(role: str) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setFontWeight(QFont.Bold)
    fmt.setForeground(ROLE_COLORS[role])
    return fmt


class ConversationView(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, readOnly=True)
        self.setObjectName("paneOutput")
        self.setPlaceholderText("The conversation appears here; replies stream in as they are generated.")
        # Tinted through the palette, not a style sheet: a style sheet would make the text area transparent,
        # and then every streamed chunk repainted the whole pane frame beneath it as well.
        tinted = self.palette()
        tinted.setColor(QPalette.Base, tinted.color(QPalette.AlternateBase))
        self.setPalette(tinted)
        self.setMinimumHeight(140)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)
        self._plain = QTextCharFormat()
        self._headers = {role: _header_format(role) for role in ROLE_LABELS}
        self._backlog: list[str] = []

    def render(self, spec: PaneSpec) -> None:
        """Show every turn, then the reply in progress (or one that never became a turn)."""
        self._backlog.clear()
        self.clear()
        cursor = QTextCursor(self.document())
        first = True
        for turn in spec.turns:
            self._block(cursor, turn["role"], turn["content"], first)
            first = False
        result = spec.result
        answered = bool(spec.turns) and spec.turns[-1]["role"] == "assistant"
        if result.busy or (result.text and not answered) or (result.state == RunState.INTERRUPTED and not answered):
            note = "" if result.busy else f" ({result.state.value})"
            self._block(cursor, "assistant", result.text, first, note)
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    def _block(self, cursor: QTextCursor, role: str, text: str, first: bool, note: str = "") -> None:
        if not first:
            cursor.insertText("\n\n", self._plain)
        cursor.insertText(ROLE_LABELS[role] + note, self._headers[role])
        cursor.insertText("\n" + text, self._plain)

    def append(self, delta: str) -> None:
        self._backlog.append(delta)
        if not self.visibleRegion().isEmpty():
            self.catch_up()

    def catch_up(self) -> None:
        """Insert the collected text at the end, following it unless the user scrolled up."""
        if not self._backlog:
            return
        text = "".join(self._backlog)
        self._backlog.clear()
        bar = self.verticalScrollBar()
        follow = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.End)
        cursor.insertText(text, self._plain)
        if follow:
            bar.setValue(bar.maximum())
