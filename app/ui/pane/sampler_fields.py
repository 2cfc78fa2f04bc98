"""The pane's other samplers (DRY, XTC, typical-p, mirostat, top-nσ, dynamic temperature): llama-server's settings
under its names, folded away in the sampling form until wanted.

Ranges and defaults are `app.engine.limits` (llama-server's defaults, each of which turns its sampler off), the
same numbers SamplingParams validates against; the sequence breakers are typed like stop strings.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QGridLayout, QLabel, QLineEdit, QSpinBox, QWidget

from app.engine import SamplingParams, limits
from app.engine.limits import Limit
from app.ui.widgets.escaped_list import format_stops, parse_stops

MIROSTAT_LABELS = ("off", "Mirostat", "Mirostat 2.0")  # SamplingParams.mirostat 0, 1, 2


def spin_box(limit: Limit) -> QSpinBox | QDoubleSpinBox:
    """A spin box over `limit`'s range and step, at its default (an int limit gets a QSpinBox)."""
    if isinstance(limit.default, int):
        box = QSpinBox()
        box.setRange(int(limit.low), int(limit.high))
    else:
        box = QDoubleSpinBox()
        box.setDecimals(limit.decimals)
        box.setRange(limit.low, limit.high)
        box.setSingleStep(limit.step)
    box.setValue(limit.default)
    return box


# (SamplingParams field, label, tooltip), in llama-server's chain order
NUMBERS = (
    ("dry_multiplier", "DRY multiplier", "Penalise tokens that extend a repeat of earlier text (0 = off)"),
    ("dry_base", "DRY base", "Penalty = multiplier × base ^ (repeat length − allowed length)"),
    ("dry_allowed_length", "DRY allowed length", "Repeats up to this many tokens long go unpunished"),
    ("dry_penalty_last_n", "DRY window", "How many recent tokens DRY scans for repeats (0 = off)"),
    ("top_n_sigma", "Top-nσ", "Keep tokens whose logit is within n standard deviations of the top one (≤ 0 = off)"),
    ("typical_p", "Typical-p", "Locally typical sampling (1 = off)"),
    ("xtc_probability", "XTC probability", "Chance per token that XTC removes the most likely tokens (0 = off)"),
    ("xtc_threshold", "XTC threshold", "Tokens at least this likely are removed, all but the least of them "
                                       "(> 0.5 = off)"),
    ("dynatemp_range", "Dyn. temp range", "Temperature varies in [T − range, T + range] with the entropy (0 = off)"),
    ("dynatemp_exponent", "Dyn. temp exponent", "How the entropy maps onto that range"),
    ("mirostat_tau", "Mirostat tau", "Target surprise (bits per token)"),
    ("mirostat_eta", "Mirostat eta", "Learning rate"),
)


class SamplerFields(QWidget):
    """`read(base)` -> `base` with these fields; `load(params)` shows them (no sig_changed)."""

    sig_changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.boxes = {name: spin_box(getattr(limits, name.upper())) for name, _, _ in NUMBERS}
        self.mirostat = QComboBox()
        self.mirostat.addItems(MIROSTAT_LABELS)
        self.mirostat.setToolTip("Mirostat replaces the rest of the chain (penalties, DRY, top-k…), as in "
                                 "llama-server; greedy (temperature 0) stays greedy")
        self.breakers = QLineEdit()
        self.breakers.setToolTip(r"DRY sequence breakers: a repeat never runs across one. Comma-separated; "
                                 r"\n = newline, \, = comma")
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(4)
        fields = [(label, self.boxes[name], tip) for name, label, tip in NUMBERS]
        fields.insert(4, ("DRY breakers", self.breakers, self.breakers.toolTip()))
        fields.insert(11, ("Mirostat", self.mirostat, self.mirostat.toolTip()))
        for i, (label, widget, tip) in enumerate(fields):
            row, col = divmod(i, 2)
            grid.addWidget(QLabel(label, toolTip=tip), row, col * 2)
            grid.addWidget(widget, row, col * 2 + 1)
            widget.setToolTip(tip)
        for box in self.boxes.values():
            box.valueChanged.connect(self.sig_changed)
        self.mirostat.currentIndexChanged.connect(self.sig_changed)
        self.breakers.textChanged.connect(self.sig_changed)
        self.load(SamplingParams())

    def read(self, base: SamplingParams) -> SamplingParams:
        """Raises ValueError naming a bad value (no sequence breakers)."""
        breakers = parse_stops(self.breakers.text())
        if not breakers:
            raise ValueError("DRY breakers: give at least one (llama-server's: " + r'\n, :, ", *)')
        values = {name: box.value() for name, box in self.boxes.items()}
        return dataclasses.replace(base, **values, mirostat=self.mirostat.currentIndex(),
                                   dry_sequence_breakers=tuple(breakers))

    def load(self, params: SamplingParams) -> None:
        self.blockSignals(True)
        try:
            for name, box in self.boxes.items():
                box.setValue(getattr(params, name))
            self.mirostat.setCurrentIndex(params.mirostat)
            if tuple(parse_stops(self.breakers.text())) != params.dry_sequence_breakers:
                self.breakers.setText(format_stops(params.dry_sequence_breakers))
        finally:
            self.blockSignals(False)
