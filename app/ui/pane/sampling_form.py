"""Per-pane sampling settings: spin boxes bounded to valid ranges, so most bad input cannot be typed at all.

Ranges and defaults are `app.engine.limits`, the same numbers SamplingParams validates against. What can still
be wrong (a stop list, a seed, no DRY breakers) is reported by `read()` as a message, and nothing is lost. The
other samplers (sampler_fields.py) sit in a folded "More samplers" section. Speculative decoding (off, auto, on:
PaneSpec.speculative; n-gram or a draft model: draft_field.py) sits below, beside the thinking switch: it changes
the speed, never the tokens.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QRegularExpression, Signal
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QWidget

from app.engine import SamplingParams, limits
from app.session.state import SPEC_MODE_DEFAULT
from app.ui.pane.adapter_field import AdapterField
from app.ui.pane.draft_field import DraftField
from app.ui.pane.sampler_fields import SamplerFields, spin_box
from app.ui.pane.thinking_view import ThinkingSettings
from app.ui.widgets.collapsible import collapsible
from app.ui.widgets.escaped_list import format_stops, parse_stops

SPECULATIVE_TIP = ("Draft tokens (looked up in the prompt and reply, or guessed by a draft model) and verify them in "
                   "one step: the same tokens, faster when the drafts are right (a reply that copies its input). "
                   "auto stops drafting for a request whose drafts are mostly rejected, and beside more than 2 busy "
                   "streams")


class SamplingForm(QWidget):
    """The knobs of one pane. `read()` -> (SamplingParams, max_tokens, stops) or raises ValueError."""

    sig_changed = Signal()
    """The user changed any value (valid or not)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.temperature = spin_box(limits.TEMPERATURE)
        self.temperature.setToolTip("0 = greedy (deterministic)")
        self.top_k = spin_box(limits.TOP_K)
        self.top_k.setToolTip("0 disables top-k")
        self.top_p = spin_box(limits.TOP_P)
        self.min_p = spin_box(limits.MIN_P)
        self.repeat_penalty = spin_box(limits.REPEAT_PENALTY)
        self.repeat_penalty.setToolTip("1.0 = off")
        self.max_tokens = spin_box(limits.MAX_TOKENS)
        self.seed = QLineEdit()
        self.seed.setPlaceholderText("random")
        self.seed.setValidator(QRegularExpressionValidator(QRegularExpression(r"\d{0,10}")))
        self.stop = QLineEdit()
        self.stop.setPlaceholderText(r"e.g. \n\n, END")
        self.stop.setToolTip(r"Comma-separated stop strings. \n = newline, \t = tab, \, = comma")
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        fields = [("Temperature", self.temperature), ("Top-k", self.top_k), ("Top-p", self.top_p),
                  ("Min-p", self.min_p), ("Repeat penalty", self.repeat_penalty), ("Max tokens", self.max_tokens),
                  ("Seed", self.seed), ("Stop", self.stop)]
        for i, (label, widget) in enumerate(fields):
            row, col = divmod(i, 2)
            grid.addWidget(QLabel(label), row, col * 2)
            grid.addWidget(widget, row, col * 2 + 1)
            changed = widget.textChanged if isinstance(widget, QLineEdit) else widget.valueChanged
            changed.connect(self.sig_changed)
        self.samplers = SamplerFields()  # DRY, XTC, typical-p, mirostat, top-nσ, dynamic temperature
        self.samplers_toggle, _ = collapsible("More samplers", self.samplers, expanded=False)
        self.samplers_toggle.setToolTip("DRY, XTC, typical-p, mirostat, top-nσ and dynamic temperature, "
                                        "as llama-server has them")
        row = len(fields) // 2 + 1
        grid.addWidget(self.samplers_toggle, row, 0, 1, 4)
        grid.addWidget(self.samplers, row + 1, 0, 1, 4)
        self.samplers.sig_changed.connect(self.sig_changed)
        self.thinking = ThinkingSettings()  # a reasoning model's switch and budget (PaneSpec.thinking*)
        grid.addWidget(self.thinking, row + 2, 0, 1, 4)
        self.thinking.sig_changed.connect(self.sig_changed)
        self.speculative = QComboBox(toolTip=SPECULATIVE_TIP)
        for mode in limits.SPEC_MODES:
            self.speculative.addItem(mode, mode)
        self.speculative.setCurrentIndex(limits.SPEC_MODES.index(SPEC_MODE_DEFAULT))
        line = QHBoxLayout(spacing=6)  # laid out like the thinking row above it
        line.addWidget(QLabel("Speculative decoding", toolTip=SPECULATIVE_TIP))
        line.addWidget(self.speculative)
        self.draft = DraftField()  # n-gram or a draft model, and its file (PaneSpec.speculative_kind, draft_model)
        line.addWidget(self.draft, 1)
        grid.addLayout(line, row + 3, 0, 1, 4)
        self.speculative.currentIndexChanged.connect(self.sig_changed)
        self.draft.sig_changed.connect(self.sig_changed)
        self.adapters = AdapterField()  # LoRA adapters with scales (PaneSpec.lora)
        grid.addWidget(self.adapters, row + 4, 0, 1, 4)
        self.adapters.sig_changed.connect(self.sig_changed)

    def read(self, base: SamplingParams | None = None) -> tuple[SamplingParams, int, list[str]]:
        """The form's values over `base` (settings the form does not show, e.g. a frequency penalty from a
        file, are kept); raises ValueError naming a bad value."""
        seed_text = self.seed.text().strip()
        seed = int(seed_text) if seed_text else None
        params = dataclasses.replace(
            base or SamplingParams(), temperature=self.temperature.value(), top_k=self.top_k.value(),
            top_p=self.top_p.value(), min_p=self.min_p.value(), repeat_penalty=self.repeat_penalty.value(), seed=seed)
        return self.samplers.read(params), self.max_tokens.value(), parse_stops(self.stop.text())

    def load(self, params: SamplingParams, max_tokens: int, stops) -> None:
        """Show these values (no sig_changed)."""
        self.blockSignals(True)
        try:
            for name in ("temperature", "top_k", "top_p", "min_p", "repeat_penalty"):
                getattr(self, name).setValue(getattr(params, name))
            self.max_tokens.setValue(max_tokens)
            seed = "" if params.seed is None else str(params.seed)
            if self.seed.text().strip() != seed:  # untouched while the user types an equal value
                self.seed.setText(seed)
            if parse_stops(self.stop.text()) != list(stops):
                self.stop.setText(format_stops(stops))
            self.samplers.load(params)
        finally:
            self.blockSignals(False)

    def speculative_mode(self) -> str:
        """The chosen mode, one of limits.SPEC_MODES (PaneSpec.speculative)."""
        return self.speculative.currentData()

    def load_speculative(self, mode: str) -> None:
        """Show this mode (no sig_changed)."""
        self.blockSignals(True)
        try:
            self.speculative.setCurrentIndex(limits.SPEC_MODES.index(mode))
        finally:
            self.blockSignals(False)
