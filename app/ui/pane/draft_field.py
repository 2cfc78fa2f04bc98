"""How a pane's speculative decoding drafts (PaneSpec.speculative_kind, PaneSpec.draft_model): n-gram lookup in
the request's own tokens, or a draft model, a small GGUF sharing the model's vocabulary, picked with a file
dialog or typed. Shown beside the speculative mode; the file field only for kind "draft model". A draft model that
does not fit (another vocabulary, not a model) ends that run with a message naming both files; the model stays."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget

from app.engine import limits

TIP = ("How drafts are made: n-gram looks them up in the prompt and reply; a draft model (a small GGUF with the "
       "same vocabulary as the model, e.g. a smaller model of its family) guesses them. The same tokens either way.")
KIND_LABELS = {"ngram": "n-gram", "draft": "draft model"}  # how the window names limits.SPEC_KINDS
FILE_TIP = "The draft model's GGUF file; empty: the draft model the local engine was started with (run --spec-draft)"


class DraftField(QWidget):
    sig_changed = Signal()
    """The kind or the file changed."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = QComboBox(toolTip=TIP)
        for kind in limits.SPEC_KINDS:
            self.kind.addItem(KIND_LABELS[kind], kind)
        self.kind.setCurrentIndex(limits.SPEC_KINDS.index(limits.SPEC_KIND_DEFAULT))
        self.path = QLineEdit(placeholderText="draft model (GGUF)", toolTip=FILE_TIP, clearButtonEnabled=True)
        self.browse = QPushButton("Choose…", toolTip="pick the draft model's GGUF file")
        line = QHBoxLayout(self)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(6)
        line.addWidget(self.kind)
        line.addWidget(self.path, 1)
        line.addWidget(self.browse)
        line.addStretch(0)  # takes the room while the file field is hidden (the field's stretch wins otherwise)
        self._show_file()
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.path.textChanged.connect(self.sig_changed)
        self.browse.clicked.connect(self._choose)

    def read(self) -> tuple[str, str]:
        """(kind, draft model path as written)."""
        return self.kind.currentData(), self.path.text().strip()

    def load(self, kind: str, path: str) -> None:
        """Show these values (no sig_changed); a path already shown (modulo spaces) is left as typed."""
        self.blockSignals(True)
        try:
            self.kind.setCurrentIndex(limits.SPEC_KINDS.index(kind))
            if self.path.text().strip() != path:
                self.path.setText(path)
            self._show_file()
        finally:
            self.blockSignals(False)

    def _kind_changed(self) -> None:
        self._show_file()
        self.sig_changed.emit()

    def _show_file(self) -> None:
        drafting = self.kind.currentData() == "draft"
        self.path.setVisible(drafting)
        self.browse.setVisible(drafting)

    def _choose(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a draft model", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.path.setText(path)
