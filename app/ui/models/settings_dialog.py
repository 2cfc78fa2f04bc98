"""The theme (System, Light, Dark: previewed as it is picked, kept on OK) and the engine settings: slots,
context per slot, threads, reproducible outputs, how a new prompt shares steps with running panes (pacing), KV
cache type and GPU layers (with the memory they need).
Changing the engine settings reloads the engine; settings that will not fit free memory ask first. The embedder
(meaning similarity, `similar`, answer clusters: embedder_field.py) and the cluster distance are saved without
a reload."""

from __future__ import annotations

import os

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from app.ui import settings as keys
from app.ui.models.embedder_field import EmbedderField
from app.ui.models.fit_prompt import confirm_fit
from app.ui.models.memory_settings import MemoryRows
from app.ui.settings import Settings
from app.ui.theme import THEMES, Theme

PACING_CHOICES = {"smooth": "Keep running panes smooth", "balanced": "Balanced",
                  "fast": "Get the new prompt out fast"}  # the names of limits.PACING


class SettingsDialog(QDialog):
    def __init__(self, settings: Settings, parent: QWidget | None = None, model_path: str | None = None):
        super().__init__(parent)
        self.setWindowTitle("Chorus settings")
        self.settings = settings
        self.engine_changed = False
        self.boxes: dict[str, QSpinBox] = {}
        form = QFormLayout(self)
        self.theme = QComboBox(objectName="themeChoice", toolTip="Light or dark: applies at once, no reload")
        for choice, text in THEMES.items():
            self.theme.addItem(text, choice)
        self._theme_before = Theme.of().choice
        self.theme.setCurrentIndex(max(0, self.theme.findData(self._theme_before)))
        self.theme.currentIndexChanged.connect(lambda: Theme.of().use(self.theme.currentData()))  # a preview
        form.addRow("Theme", self.theme)
        rows = [(keys.SLOTS, "Parallel slots", "Sequences decoded together in one batch", 1),
                (keys.CONTEXT_PER_SLOT, "Context per slot", "Tokens each slot holds: prompt plus reply",
                 int(keys.CONTEXT_PER_SLOT.limit.step)),
                (keys.THREADS, "CPU threads", f"This machine has {os.cpu_count()} logical cores", 1)]
        for setting, label, tip, step in rows:
            low, high = setting.range
            box = QSpinBox(minimum=low, maximum=high, singleStep=step, value=settings.get(setting), toolTip=tip)
            form.addRow(label, box)
            self.boxes[setting.key] = box
        self.reproducible = QCheckBox("Same tokens whatever else runs", checked=settings.get(keys.REPRODUCIBLE))
        self.reproducible.setToolTip(
            "A request gives the same tokens alone or beside others, from the prompt cache or not (same model "
            "file, build, CPU type and threads).\nThroughput stays within 5-10%; long prompts reach their first token "
            "later (~1.7x at 1,500 tokens). Details: docs/engine.md")
        form.addRow("Reproducible outputs", self.reproducible)
        self.pacing = QComboBox(objectName="pacingChoice", toolTip=(
            "While a new prompt is read in beside running panes, each step gives part of its time to the prompt.\n"
            "Smooth: the running panes' tokens keep flowing (gaps about 2x steady); the new prompt's first token "
            "comes later.\nFast: the new prompt gets most of each step (its first token sooner); running panes "
            "stutter (gaps about 4x steady).\nDetails: docs/guide.md, Settings"))
        for choice, text in PACING_CHOICES.items():
            self.pacing.addItem(text, choice)
        self.pacing.setCurrentIndex(max(0, self.pacing.findData(settings.get(keys.PACING))))
        form.addRow("New prompt beside running panes", self.pacing)
        # Memory: KV cache type, GPU layers, the live estimate for `model_path`.
        self.model_path = model_path
        self.memory = MemoryRows(form, settings, model_path, self.boxes[keys.SLOTS.key],
                                 self.boxes[keys.CONTEXT_PER_SLOT.key])
        self.embedder_field = EmbedderField(settings.get(keys.EMBEDDER))
        self.embedder = self.embedder_field.embedder
        form.addRow("Embedder", self.embedder_field)
        limit = keys.CLUSTER_DISTANCE.limit
        self.cluster_distance = QDoubleSpinBox(decimals=limit.decimals, minimum=limit.low, maximum=limit.high,
                                               singleStep=limit.step, value=settings.get(keys.CLUSTER_DISTANCE))
        self.cluster_distance.setToolTip("Answers join one cluster while their mean cosine distance (1 − cosine "
                                         "similarity) is at most this")
        form.addRow("Cluster distance", self.cluster_distance)
        note = QLabel("Changing the engine settings reloads the model; running generations are stopped (you are "
                      "asked first).")
        note.setWordWrap(True)
        form.addRow(note)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def accept(self) -> None:
        if self.model_path and not confirm_fit(self, self.model_path, self.memory.fields(), "Apply"):
            return  # the dialog stays open to change them
        for setting in (keys.SLOTS, keys.CONTEXT_PER_SLOT, keys.THREADS):
            value = self.boxes[setting.key].value()
            if value != self.settings.get(setting):
                self.settings.set(setting, value)
                self.engine_changed = True
        if self.reproducible.isChecked() != self.settings.get(keys.REPRODUCIBLE):
            self.settings.set(keys.REPRODUCIBLE, self.reproducible.isChecked())
            self.engine_changed = True
        if self.pacing.currentData() != self.settings.get(keys.PACING):
            self.settings.set(keys.PACING, self.pacing.currentData())
            self.engine_changed = True
        self.engine_changed |= self.memory.apply()
        self.settings.set(keys.EMBEDDER, self.embedder_field.spec())
        self.settings.set(keys.CLUSTER_DISTANCE, self.cluster_distance.value())
        self.settings.set(keys.THEME, self.theme.currentData())  # the preview, kept
        super().accept()

    def reject(self) -> None:
        Theme.of().use(self._theme_before)  # the preview is undone
        super().reject()
