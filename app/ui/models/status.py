"""The status bar's model readout: a busy bar while a model loads, then what is loaded and how it is set up
(elided to its room, the full text in its tooltip)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QProgressBar, QStatusBar

from app.engine import ModelInfo
from app.models import model_name
from app.ui.widgets.elided_label import ElidedLabel


class ModelStatus:
    """Owns the label and the progress bar it adds to `status_bar`; `loading` (a signal with the model's path)
    starts the busy bar, `loaded(info)` shows the model `main()` (the main backend) runs."""

    def __init__(self, loading: SignalInstance, main: Callable[[], object | None], status_bar: QStatusBar):
        self._main, self.status_bar = main, status_bar
        self.label = ElidedLabel("No model loaded", objectName="modelLabel")  # cut with "…" in a narrow window
        self.label.setAccessibleName("Model")
        self.progress = QProgressBar(maximumWidth=160, textVisible=False)
        self.progress.setRange(0, 0)  # indeterminate: llama.cpp loads a small model in well under a second
        self.progress.hide()
        status_bar.addPermanentWidget(self.progress)
        status_bar.addPermanentWidget(self.label)
        loading.connect(self.loading)

    def loading(self, path: str) -> None:
        self.progress.show()
        self.label.setText(f"Loading {model_name(path)}…")

    def loaded(self, info: ModelInfo) -> None:
        self.progress.hide()
        main = self._main()
        figures = main.stats() if main is not None else None  # n_ctx_per_slot: the context each slot really has
        slots = f"{figures.n_slots} slots × {figures.n_ctx_per_slot}" if figures else "?"
        self.label.setText(
            f"{model_name(info.path)} · {info.architecture} · {info.params_label} params · {info.quantization} · "
            f"trained ctx {info.n_ctx_train} · {slots} · "
            f"prompt: {info.chat_format} · KV {info.kv_type} · {info.offload}")
        note = f"\n{info.chat_format_note}" if info.chat_format_note else ""
        self.label.setToolTip(f"{info.path}\nName in the file's metadata: {info.name}\n"
                              f"Prompt format: {info.chat_format}{note}\n"
                              "(Model → Prompt format changes it for this model file)")
        self.status_bar.showMessage(f"Model ready: {model_name(info.path)}", 4000)
