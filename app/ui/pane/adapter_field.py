"""A pane's LoRA adapters: one line of text (`a.gguf@0.5; b.gguf`, app/session/adapters.py) and a button that
adds a file. The text is checked as typed and a problem is named beside it; the pane keeps its last good set.
Adapters apply to a local model only: a server is told nothing and its pane's status says so."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from app.engine import LoraAdapter
from app.session import adapters

TIP = ("LoRA adapters (GGUF, from convert_lora_to_gguf.py) applied to the local model, each with its scale: "
       "a.gguf@0.5; b.gguf. Empty: the base model. Sweep them with Variants (adapter and scale axes).")


class AdapterField(QWidget):
    sig_changed = Signal()
    """The text changed and reads as adapters (a text that does not is named and not reported)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.edit = QLineEdit(placeholderText="none (base model)", toolTip=TIP, clearButtonEnabled=True)
        self.add_button = QPushButton("Add…", toolTip="add a LoRA adapter file")
        self.problem = QLabel(objectName="adapterProblem", wordWrap=True)
        self.problem.setStyleSheet("color: #b91c1c")
        self.problem.hide()
        line = QHBoxLayout(self)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(6)
        line.addWidget(QLabel("Adapters", toolTip=TIP))
        line.addWidget(self.edit, 1)
        line.addWidget(self.add_button)
        line.addWidget(self.problem)
        self.edit.textChanged.connect(self._edited)
        self.add_button.clicked.connect(self._add_file)

    def read(self) -> tuple[LoraAdapter, ...]:
        """The adapters as written; raises ValueError naming the part that is not one."""
        return adapters.parse_text(self.edit.text())

    def load(self, lora: tuple[LoraAdapter, ...]) -> None:
        """Show these adapters (no sig_changed); text that already reads as them is left as typed."""
        try:
            same = self.read() == tuple(lora)
        except ValueError:
            same = False
        if not same:
            self.edit.blockSignals(True)
            self.edit.setText(adapters.to_text(tuple(lora)))
            self.edit.blockSignals(False)
            self._show_problem(None)

    def _edited(self) -> None:
        try:
            self.read()
        except ValueError as exc:
            self._show_problem(str(exc))
            return
        self._show_problem(None)
        self.sig_changed.emit()

    def _show_problem(self, problem: str | None) -> None:
        self.problem.setText(f"⚠ {problem}" if problem else "")
        self.problem.setVisible(bool(problem))

    def _add_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Add a LoRA adapter", "", "GGUF adapters (*.gguf);;All files (*)")
        if path:
            text = self.edit.text().strip()
            self.edit.setText(f"{text}{adapters.SEPARATOR} {path}" if text else path)
