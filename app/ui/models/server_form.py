"""Add a server: its URL, an optional API key, the model (read from the server), and how many requests at once.

"Test connection" asks the server for its models (GET /v1/models) off the GUI thread and fills the model list;
a failure is shown under the form with the server's own cause. A plain-http URL to another machine gets a
visible warning. The key goes to the OS keyring only when the user ticks "Remember" (app.backends.KeyStore).
"""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from app.backends import KeyStore, plain_http_warning
from app.backends.openai_backend import SERVER_CONCURRENCY
from app.backends.registry import BackendSpec, list_server_models

DEFAULT_MODEL = "(the server's default)"


class ServerForm(QDialog):
    def __init__(self, keys: KeyStore, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Add a server")
        self.keys = keys
        self.url = QLineEdit(placeholderText="http://127.0.0.1:8080/v1")
        self.api_key = QLineEdit(placeholderText="none", echoMode=QLineEdit.Password)
        self.remember = QCheckBox("Remember it in the system keyring" if keys.persistent
                                  else "No system keyring: the key is kept for this session only")
        self.remember.setEnabled(keys.persistent)
        self.model = QComboBox(editable=True, toolTip="Test connection lists the server's models")
        self.model.addItem(DEFAULT_MODEL)
        self.test_button = QPushButton("Test connection")
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.test_button)
        low, high = int(SERVER_CONCURRENCY.low), int(SERVER_CONCURRENCY.high)
        self.concurrency = QSpinBox(minimum=low, maximum=high, value=int(SERVER_CONCURRENCY.default),
                                    toolTip="Requests streamed at once; more wait in Chorus's queue")
        self.warning = QLabel(objectName="serverWarning", wordWrap=True)
        self.result = QLabel(objectName="serverResult", wordWrap=True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Add")
        form = QFormLayout(self)
        form.addRow("Server URL", self.url)
        form.addRow("API key", self.api_key)
        form.addRow("", self.remember)
        form.addRow("Model", model_row)
        form.addRow("Concurrent requests", self.concurrency)
        form.addRow(self.warning)
        form.addRow(self.result)
        form.addRow(self.buttons)
        self.setMinimumWidth(600)
        self.url.textChanged.connect(self._url_changed)
        self.test_button.clicked.connect(lambda: asyncio.ensure_future(self.test_connection()))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self._url_changed("")

    def _url_changed(self, _text: str) -> None:
        url = self.url.text().strip()
        if self.model.count() > 1 or self.model.currentText() != DEFAULT_MODEL:  # another server's models
            self.model.clear()
            self.model.addItem(DEFAULT_MODEL)
        warning = plain_http_warning(url) if url else None
        self.warning.setText(f"⚠ {warning}" if warning else "")
        self.warning.setVisible(bool(warning))
        problem = self.spec().problem() if url else "type the server's URL"
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(problem is None)
        self.test_button.setEnabled(problem is None)
        self.result.setText(f"⚠ {problem}" if url and problem else "")
        self.adjustSize()  # room for a warning that wraps
    def spec(self) -> BackendSpec:
        model = self.model.currentText().strip()
        return BackendSpec(kind="server", url=self.url.text().strip().rstrip("/"),
                           model=None if model in ("", DEFAULT_MODEL) else model,
                           max_concurrency=self.concurrency.value())

    def key(self) -> str | None:
        return self.api_key.text().strip() or None

    async def test_connection(self) -> list[str] | None:
        """Ask the server for its models; fill the list or say why not. Returns the models (None: failed)."""
        spec = self.spec()
        self.result.setText(f"Asking {spec.url} for its models…")
        self.test_button.setEnabled(False)
        try:
            models = await asyncio.to_thread(list_server_models, spec.url, self.key())
        except ConnectionError as exc:
            self.result.setText(f"⚠ {exc}")
            self.adjustSize()
            return None
        finally:
            self.test_button.setEnabled(True)
        chosen = self.model.currentText()
        self.model.clear()
        self.model.addItems(models or [DEFAULT_MODEL])
        if chosen in models:
            self.model.setCurrentText(chosen)
        self.result.setText(f"Connected: {len(models)} model(s) served." if models
                            else "Connected, but the server lists no models.")
        self.adjustSize()
        return models
