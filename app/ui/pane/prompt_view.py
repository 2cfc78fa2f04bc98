"""'Prompt as the model sees it': the exact text a pane's next run sends its model, rendered by the model's own
chat template (SessionController.prompt_as_seen), special tokens and all, in a read-only monospace view.

The dialog shows what it is given and keeps no state of its own; reopen it to see a changed pane.
"""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget


def visible(text: str) -> str:
    """Whitespace a reader would miss made visible: a newline ends with ↵, a tab is →."""
    return text.replace("\t", "→\t").replace("\n", "↵\n")


class PromptView(QDialog):
    def __init__(self, title: str, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Prompt as the model sees it — {title}")
        self.resize(720, 520)
        self.caption = QLabel(f"{len(text):,} characters, rendered by the model's chat template exactly as the engine "
                              "sends it (↵ marks a newline). Special tokens are shown as the template writes them.",
                              wordWrap=True)
        self.text = QPlainTextEdit(readOnly=True, objectName="promptAsSeen")
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.text.setPlainText(visible(text))
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.caption)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
