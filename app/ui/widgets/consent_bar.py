"""The bar that asks before anything from a file starts or runs (app/session/consent.py): MCP servers a session
names, an evaluation's code. It shows one question at a time, exactly what would start or run, as plain text,
with the asker's button (*Start them*, *Run it*) and *Not now*; questions waiting behind it follow in turn. A
newer question of the same kind replaces one not yet answered."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolBar, QWidget

from app.session.consent import Ask

SHOWN = 12  # lines listed; the rest are counted


class ConsentBar(QToolBar):
    def __init__(self, parent: QWidget | None = None):
        super().__init__("Asks before anything from a file starts or runs", parent)
        self.setObjectName("consentBar")
        self.setMovable(False)
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(6, 2, 6, 2)
        self.text = QLabel(objectName="consentText", wordWrap=True, textFormat=Qt.PlainText)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.agree_button = QPushButton()
        self.later_button = QPushButton("Not now")
        row.addWidget(QLabel("⚠"))
        row.addWidget(self.text, 1)
        row.addWidget(self.agree_button)
        row.addWidget(self.later_button)
        box.setStyleSheet("background: #fef3c7; color: #111827;")
        self.addWidget(box)
        self.agree_button.clicked.connect(self.agree)
        self.later_button.clicked.connect(self.later)
        self.asks: list[Ask] = []  # the question shown first, then those waiting
        self.hide()

    @property
    def current(self) -> Ask | None:
        return self.asks[0] if self.asks else None

    def ask(self, question: Ask) -> None:
        """Show `question` (after those waiting; in place of an unanswered one of its kind)."""
        kinds = [a.kind for a in self.asks]
        if question.kind in kinds:
            self.asks[kinds.index(question.kind)] = question
        else:
            self.asks.append(question)
        self._show()

    def withdraw(self, kind: str) -> None:
        """Nothing of `kind` waits any more (its servers were started from elsewhere, or removed)."""
        self.asks = [a for a in self.asks if a.kind != kind]
        self._show()

    def agree(self) -> None:
        question = self._pop()
        if question is not None:
            question.on_agree()

    def later(self) -> None:
        question = self._pop()
        if question is not None and question.on_later is not None:
            question.on_later()

    def _pop(self) -> Ask | None:
        question = self.asks.pop(0) if self.asks else None
        self._show()
        return question

    def _show(self) -> None:
        question = self.current
        if question is None:
            self.hide()
            return
        listed = list(question.lines[:SHOWN])
        if len(question.lines) > SHOWN:
            listed.append(f"…and {len(question.lines) - SHOWN} more")
        if len(self.asks) > 1:
            listed.append(f"(then {len(self.asks) - 1} more question{'s' if len(self.asks) > 2 else ''})")
        self.text.setText("\n".join([question.headline, *listed]))
        self.agree_button.setText(question.agree_label)
        self.show()
