"""The stats panel's figures under the plots: one caption and value per counter of a StatsSnapshot.

Values have a fixed size and fill their background, so new text repaints just them (see StatusLine); a value
too long for its label widens it once.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from app.engine import StatsSnapshot

READOUT_SAMPLE = "9,999,999"  # sets the values' width; wider text widens them once
NAMES = [("slots", "Slots in use"), ("queued", "Queued"), ("concurrency", "Avg concurrent"),
         ("decode", "Decode"), ("prefill", "Prefill"), ("prompt_total", "Prompt tokens prefilled"),
         ("cached_total", "Prompt tokens reused"), ("hit_rate", "Cache hit rate"),
         ("coalesced", "Coalesced requests"), ("generated_total", "Generated tokens"), ("steps", "Steps"),
         ("reproducible", "Reproducible")]
TIPS = {"cached_total": "Prompt tokens whose KV came from the prompt cache or another slot, not a prefill",
        "hit_rate": "Reused prompt tokens ÷ all prompt tokens",
        "coalesced": "Requests identical to a running one: decoded once, streamed to each",
        "reproducible": "yes: a request's tokens do not depend on what else runs or on the cache "
                        "(Settings > Reproducible outputs); unknown for a server. Measured on CPU kernels only: "
                        "with layers on a GPU it says \"not measured\""}


def reproducible_label(snap: StatsSnapshot) -> str:
    """The guarantee per device: it was measured on CPU kernels, so with layers on a GPU it is not claimed."""
    if snap.reproducible and snap.gpu_layers:
        return "not measured"
    return {True: "yes", False: "no", None: "unknown"}[snap.reproducible]


class Readouts(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.labels: dict[str, QLabel] = {}
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        for i, (key, title) in enumerate(NAMES):
            row, col = divmod(i, 2)
            caption, value = QLabel(title), QLabel("–")
            caption.setObjectName("readoutCaption")
            caption.setToolTip(TIPS.get(key, ""))
            value.setObjectName("readoutValue")
            value.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
            value.setFixedSize(value.fontMetrics().horizontalAdvance(READOUT_SAMPLE), value.sizeHint().height())
            value.setAutoFillBackground(True)  # opaque: a new value repaints the label, not the dock beneath
            grid.addWidget(caption, row, col * 2)
            grid.addWidget(value, row, col * 2 + 1)
            self.labels[key] = value

    def show_snapshot(self, snap: StatsSnapshot) -> None:
        def rate(value: float | None) -> str:
            return "N/A" if value is None else f"{value:.1f} t/s"

        values = {
            "slots": f"{snap.active if snap.slots_busy is None else snap.slots_busy} / {snap.n_slots}",
            "queued": str(snap.queued),
            "concurrency": "–" if snap.avg_concurrent is None else f"{snap.avg_concurrent:.2f}",
            "decode": rate(snap.decode_tps),
            "prefill": rate(snap.prefill_tps),
            "prompt_total": f"{snap.prompt_tokens_total:,}",
            "cached_total": f"{snap.prompt_tokens_cached:,}",
            "hit_rate": "–" if snap.cache_hit_rate is None else f"{snap.cache_hit_rate:.0%}",
            "coalesced": f"{snap.coalesced:,}",
            "generated_total": f"{snap.generated_tokens_total:,}",
            "steps": f"{snap.steps:,}",
            "reproducible": reproducible_label(snap),
        }
        for key, text in values.items():
            label = self.labels[key]
            needed = label.fontMetrics().horizontalAdvance(text)
            if needed > label.width():  # rare (huge totals): one re-layout, then fixed again
                label.setFixedWidth(needed)
            label.setText(text)

    def clear(self) -> None:
        for label in self.labels.values():
            label.setText("–")
