"""The Settings dialog's embedder row: what compares answers by meaning (the meaning column, `similar`, the
stability view). A choice of the main model (the default: a generative model, so a weak embedder, and the row says
so), an embedding GGUF (typed or browsed; pooled by llama.cpp in a context of its own) or a server's
/v1/embeddings; `spec()` is the setting's value ("local", a path, or a URL). Nothing is opened here: a bad path or
URL is said by the views that use it, and the window keeps working.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from app.backends.embedding import DEFAULT_EMBEDDER, WEAK_NOTE

KINDS = (("local", "Main model (a weak embedder)"), ("gguf", "An embedding GGUF"),
         ("server", "A server's /v1/embeddings"))
PLACEHOLDERS = {"local": "", "gguf": "/path/to/an-embedding-model.gguf", "server": "http://127.0.0.1:8080/v1"}


def kind_of(spec: str) -> str:
    spec = (spec or DEFAULT_EMBEDDER).strip()
    return "local" if spec == "local" else "server" if spec.startswith(("http://", "https://")) else "gguf"


class EmbedderField(QWidget):
    def __init__(self, spec: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.kind = QComboBox()
        for key, text in KINDS:
            self.kind.addItem(text, key)
        self.kind.setAccessibleName("Embedder kind")
        self.embedder = QLineEdit(spec, placeholderText=DEFAULT_EMBEDDER)  # the spec as saved
        self.embedder.setAccessibleName("Embedder")
        self.embedder.setToolTip(f"What compares answers by meaning: \"local\" ({WEAK_NOTE}), an embedding GGUF's "
                                 "path, or a server's URL (its /v1/embeddings)")
        self.browse = QPushButton("Browse…")
        self.note = QLabel(wordWrap=True, objectName="embedderNote")
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.kind)
        row.addWidget(self.embedder, 1)
        row.addWidget(self.browse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self._typed = {kind_of(spec): spec}  # what each kind held, so switching back restores it
        self._show(kind_of(spec))
        self.kind.currentIndexChanged.connect(lambda _i: self._choose(self.kind.currentData()))
        self.embedder.textEdited.connect(self._edited)
        self.browse.clicked.connect(self.pick_file)

    def _show(self, kind: str) -> None:
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex([k for k, _ in KINDS].index(kind))
        self.kind.blockSignals(False)
        self.embedder.setReadOnly(kind == "local")
        self.embedder.setPlaceholderText(PLACEHOLDERS[kind] or DEFAULT_EMBEDDER)
        self.browse.setVisible(kind == "gguf")
        self.note.setText(f"{WEAK_NOTE[0].upper()}{WEAK_NOTE[1:]}." if kind == "local" else
                          "Pooled by llama.cpp in a context of its own; generation is untouched." if kind == "gguf"
                          else "The server must serve embeddings (llama-server --embeddings).")

    def _choose(self, kind: str) -> None:
        self.embedder.setText("local" if kind == "local" else self._typed.get(kind, ""))
        self._show(kind)

    def _edited(self, text: str) -> None:
        """Typed: kept for the kind shown (the kind is read from the text only when the dialog opens)."""
        self._typed[self.kind.currentData()] = text

    def pick_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "An embedding model", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.embedder.setText(path)
            self._typed["gguf"] = path

    def spec(self) -> str:
        return self.embedder.text().strip() or DEFAULT_EMBEDDER
