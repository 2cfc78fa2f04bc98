"""The Settings dialog's memory rows: KV cache type, GPU layers, and the live memory estimate.

The estimate is for the model that is loaded (or the one the dialog was given), at the values being edited,
so a user sees what 16 slots x 32k tokens cost before applying them. A build without a GPU backend shows
"CPU build" instead of a GPU control it could not honour.
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QHBoxLayout, QLabel, QSpinBox, QWidget

from app.engine import limits
from app.engine.devices import CPU_BUILD, gpu, gpu_offload_supported
from app.models import ScanCache, estimate_memory, model_name
from app.models.fit import available_ram, size_label
from app.ui import settings as keys
from app.ui.settings import Settings, gpu_layers_value

KV_LABELS = {"f16": "f16 (full precision)", "q8_0": "q8_0 (about half the memory)",
             "q4_0": "q4_0 (about a quarter)"}
GPU_CHOICES = (("auto", "Auto: as many layers as fit"), ("all", "All layers"), ("none", "None (CPU only)"),
               ("n", "This many layers:"))


class MemoryRows:
    """Adds its rows to `form`; `spin_boxes` (slots, context) are watched for the estimate."""

    def __init__(self, form: QFormLayout, settings: Settings, model_path: str | None, slots: QSpinBox,
                 context: QSpinBox):
        self.settings, self.model_path, self.slots, self.context = settings, model_path, slots, context
        self._cache = ScanCache()  # in memory: the header is read once while the dialog is open
        self.kv_type = QComboBox(objectName="kvType")
        for name in limits.KV_TYPES:
            self.kv_type.addItem(KV_LABELS.get(name, name), name)
        self.kv_type.setCurrentIndex(max(0, self.kv_type.findData(settings.engine_fields()["kv_type"])))
        self.kv_type.setToolTip("The KV cache's element type. Quantized caches hold more tokens in the same "
                                "memory and turn flash attention on; outputs can differ slightly from f16 "
                                "(bench: KV-type figures, docs/engine.md).")
        form.addRow("KV cache", self.kv_type)
        self.gpu_choice: QComboBox | None = None
        self.gpu_count: QSpinBox | None = None
        if gpu_offload_supported():
            form.addRow("GPU layers", self._gpu_row())
        else:
            note = QLabel(f"{CPU_BUILD}: this llama.cpp has no GPU backend, every layer runs on the CPU",
                          objectName="gpuNote")
            note.setWordWrap(True)
            form.addRow("GPU", note)
        self.estimate = QLabel(objectName="memoryEstimate", wordWrap=True)
        form.addRow("Memory needed", self.estimate)
        for signal in (slots.valueChanged, context.valueChanged, self.kv_type.currentIndexChanged):
            signal.connect(self.refresh)
        self.refresh()

    def _gpu_row(self) -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        self.gpu_choice = QComboBox(objectName="gpuLayers")
        for key, label in GPU_CHOICES:
            self.gpu_choice.addItem(label, key)
        device = gpu()
        self.gpu_choice.setToolTip(f"Device: {device.description or device.name}" if device else "No GPU found")
        stored = gpu_layers_value(self.settings.get(keys.GPU_LAYERS))
        key = {limits.GPU_LAYERS_AUTO: "auto", -1: "all", 0: "none"}.get(stored, "n")
        self.gpu_count = QSpinBox(minimum=1, maximum=int(limits.GPU_LAYERS.high),
                                  value=stored if isinstance(stored, int) and stored > 0 else 1)
        self.gpu_choice.setCurrentIndex(self.gpu_choice.findData(key))
        self.gpu_count.setEnabled(key == "n")
        self.gpu_choice.currentIndexChanged.connect(lambda: self.gpu_count.setEnabled(self._gpu_key() == "n"))
        self.gpu_choice.currentIndexChanged.connect(self.refresh)
        self.gpu_count.valueChanged.connect(self.refresh)
        layout.addWidget(self.gpu_choice)
        layout.addWidget(self.gpu_count)
        return row

    def _gpu_key(self) -> str:
        return self.gpu_choice.currentData() if self.gpu_choice else "auto"

    def stored_gpu_layers(self) -> str:
        key = self._gpu_key()
        return str(self.gpu_count.value()) if key == "n" else key

    def fields(self) -> dict:
        """The engine fields as edited (for the fit check before applying)."""
        fields = self.settings.engine_fields()
        fields.update(n_slots=self.slots.value(), n_ctx_per_slot=self.context.value(),
                      kv_type=self.kv_type.currentData(), n_gpu_layers=gpu_layers_value(self.stored_gpu_layers()))
        return fields

    def refresh(self) -> None:
        if not self.model_path:
            self.estimate.setText("Load a model to see what it needs.")
            return
        try:
            estimate = estimate_memory(self.model_path, self.slots.value(), self.context.value(),
                                       self.kv_type.currentData(), cache=self._cache)
        except (ValueError, OSError) as exc:
            self.estimate.setText(f"No estimate: {exc}")
            return
        free = available_ram()
        warn = " — more than the free RAM" if estimate.total > free else ""
        self.estimate.setText(f"{model_name(self.model_path)}: {estimate.describe()}; "
                              f"{size_label(free)} of RAM free{warn}")
        self.estimate.setStyleSheet("color: #b00020;" if warn else "")

    def apply(self) -> bool:
        """Store the edited values; True if any changed (the engine must reload)."""
        changed = False
        for setting, value in ((keys.KV_TYPE, self.kv_type.currentData()),
                               (keys.GPU_LAYERS, self.stored_gpu_layers())):
            if value != self.settings.get(setting):
                self.settings.set(setting, value)
                changed = True
        return changed
