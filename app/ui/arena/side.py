"""One side of an arena pair: "A" or "B", its output as the view streams it, and (after the vote) which
variant it was, framed green when it won and grey when it lost. It shows only the text it is given; nothing on it
names a variant, a setting or a timing until `show_variant`.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QPlainTextEdit, QVBoxLayout

from app.session import PaneResult
from app.session.tool_cards import reply_text

WON, LOST = "#16a34a", "#94a3b8"


class ArenaSide(QFrame):
    """One blind output: "A" or "B", its text, and (after the vote) which variant it was."""

    def __init__(self, name: str):
        super().__init__(objectName=f"arenaSide{name}", frameShape=QFrame.StyledPanel)
        self.heading = QLabel(f"<span style='font-size:15pt; font-weight:600'>{name}</span>")
        self.text = QPlainTextEdit(readOnly=True)
        self.reveal = QLabel(wordWrap=True, textInteractionFlags=Qt.TextSelectableByMouse)
        self.reveal.hide()
        layout = QVBoxLayout(self)
        for widget in (self.heading, self.text, self.reveal):
            layout.addWidget(widget)

    def show_text(self, text: str) -> None:
        if self.text.toPlainText() != text:
            bar = self.text.verticalScrollBar()
            at_end = bar.value() >= bar.maximum() - 4
            self.text.setPlainText(text)
            if at_end:
                bar.setValue(bar.maximum())

    def show_variant(self, text: str, outcome: str) -> None:
        self.reveal.setText(text)
        self.reveal.show()
        self.setStyleSheet(f"#{self.objectName()} {{ border: 2px solid {WON if outcome == 'won' else LOST}; }}"
                           if outcome in ("won", "lost") else "")

    def clear(self) -> None:
        self.reveal.clear()
        self.reveal.hide()
        self.setStyleSheet("")
        self.text.clear()


def side_text(result: PaneResult) -> str:
    """What a side shows of a result: its text (tool calls as calls: name(arguments)), and why it has none or
    why it stopped short."""
    text = reply_text(result)
    if result.error:
        return f"{text}\n\n(stopped by an error: {result.error})" if text.strip() else f"(no output: {result.error})"
    if not text.strip() and not result.busy:
        return "(no output: the model wrote nothing)"
    return text


def side_problem(result: PaneResult) -> str | None:
    """Why an ended side cannot be voted on (it failed, or wrote nothing), else None."""
    if result.error:
        return f"ended in an error: {result.error}"
    return None if reply_text(result).strip() else "wrote nothing"
