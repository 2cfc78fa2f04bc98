"""The stats panel's figures under the plots, grouped by the window each one covers.

Three groups, each headed by its window so no figure can pass for another: "now" (slots, queue, coalesced
followers: the backend's state at this sample), the rates over the "last 1 s" beside their "lifetime" means, and the
"lifetime" totals (both since the last Reset). A windowed figure reads 0 (or "–" for a ratio) once its window
holds no work; a lifetime one keeps its value until Reset, and says so.

Values have a fixed size and fill their background, so new text repaints just them (see StatusLine); a value
too long for its label widens it once.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from app.engine import StatsSnapshot, limits

READOUT_SAMPLE = "9,999,999"  # sets the values' width; wider text widens them once
RECENT = f"last {limits.RATE_WINDOW_S:g} s"
LIFETIME = "lifetime"
NOW = [("slots", "Slots in use"), ("queued", "Queued"), ("following", "Coalesced"), ("reproducible", "Reproducible")]
RATES = [("decode", "Decode"), ("prefill", "Prefill"), ("concurrency", "Avg concurrent")]  # key: lifetime mean
TOTALS = [("prompt_total", "Prompt tokens prefilled"), ("cached_total", "Prompt tokens reused"),
          ("hit_rate", "Cache hit rate"), ("coalesced", "Coalesced requests"),
          ("generated_total", "Generated tokens"), ("steps", "Steps"), ("speculative", "Drafted / accepted"),
          ("images", "Images encoded / reused"), ("clips", "Audio windows encoded / reused"),
          ("frames", "Video frames encoded / reused")]
# Every readout's key, with the window it covers ("decode" is the lifetime mean, "decode_recent" the last second).
WINDOWS = {**{key: "now" for key, _ in NOW}, **{key: LIFETIME for key, _ in RATES + TOTALS},
           **{f"{key}_recent": RECENT for key, _ in RATES}}
TIPS = {"slots": "Slots holding a request now (a coalesced follower holds none)",
        "following": "Requests running now without a slot of their own: identical to a running one, they are "
                     "streamed its tokens (coalesced followers)",
        "decode": "Tokens generated per second of decoding",
        "prefill": "Prompt tokens per second of steps that only prefilled (– before the first one)",
        "concurrency": "Decode tokens per decode step: how many requests each step advanced",
        "cached_total": "Prompt tokens whose KV came from the prompt cache or another slot, not a prefill",
        "hit_rate": "Reused prompt tokens ÷ all prompt tokens",
        "coalesced": "Requests identical to a running one: decoded once, streamed to each",
        "speculative": "Speculative decoding: tokens drafted and verified / of those, the ones kept as output "
                       "(– until a request drafts)",
        "images": "Images in prompts: encoded by the vision projector / not encoded again (a kept encoding, "
                  "cached or copied KV); – until a prompt has an image",
        "clips": "Audio clips in prompts, in windows of up to 30 s: encoded by the audio projector / not encoded "
                 "again (a kept encoding, cached or copied KV); – until a prompt has a clip",
        "frames": "Distinct video frames in prompts: encoded by the vision projector / not encoded again (a kept "
                  "encoding, cached or copied KV); – until a prompt has a video",
        "reproducible": "yes: a request's tokens do not depend on what else runs or on the cache "
                        "(Settings > Reproducible outputs); unknown for a server. Measured on CPU kernels only: "
                        "with layers on a GPU it says \"not measured\""}
WINDOW_TIPS = {"now": "As of this sample", RECENT: f"Over the last {limits.RATE_WINDOW_S:g} s of wall clock: 0 "
               "(or –) once that second held no work", LIFETIME: "Since the model loaded or the last Reset"}


def reproducible_label(snap: StatsSnapshot) -> str:
    """The guarantee per device: it was measured on CPU kernels, so with layers on a GPU it is not claimed."""
    if snap.reproducible and snap.gpu_layers:
        return "not measured"
    return {True: "yes", False: "no", None: "unknown"}[snap.reproducible]


def slots_in_use(snap: StatsSnapshot) -> int:
    """Slots holding a request: never more than there are (coalesced followers hold none)."""
    busy = snap.active if snap.slots_busy is None else snap.slots_busy
    return min(busy, snap.n_slots)


def following(snap: StatsSnapshot) -> int | None:
    """Requests running without a slot of their own (coalesced followers); None when the backend cannot say."""
    return None if snap.slots_busy is None else max(snap.active - snap.slots_busy, 0)


def values(snap: StatsSnapshot) -> dict[str, str]:
    """Each readout's text for this snapshot."""
    def rate(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f} t/s"  # as every empty readout

    def ratio(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    followers = following(snap)
    return {
        "slots": f"{slots_in_use(snap)} / {snap.n_slots}",
        "queued": str(snap.queued),
        "following": "–" if followers is None else str(followers),
        "reproducible": reproducible_label(snap),
        "decode_recent": rate(snap.recent_decode_tps),
        "decode": rate(snap.decode_tps),
        "prefill_recent": rate(snap.recent_prefill_tps),
        "prefill": rate(snap.prefill_tps),
        "concurrency_recent": ratio(snap.recent_avg_concurrent),
        "concurrency": ratio(snap.avg_concurrent),
        "prompt_total": f"{snap.prompt_tokens_total:,}",
        "cached_total": f"{snap.prompt_tokens_cached:,}",
        "hit_rate": "–" if snap.cache_hit_rate is None else f"{snap.cache_hit_rate:.0%}",
        "coalesced": f"{snap.coalesced:,}",
        "generated_total": f"{snap.generated_tokens_total:,}",
        "steps": f"{snap.steps:,}",
        "speculative": f"{snap.drafted_tokens:,} / {snap.accepted_tokens:,}" if snap.drafted_tokens else "–",
        "images": f"{snap.images_encoded:,} / {snap.images_reused:,}"
                  if snap.images_encoded or snap.images_reused else "–",
        "clips": f"{snap.clips_encoded:,} / {snap.clips_reused:,}" if snap.clips_encoded or snap.clips_reused else "–",
        "frames": f"{snap.frames_encoded:,} / {snap.frames_reused:,}"
                  if snap.frames_encoded or snap.frames_reused else "–",
    }


def strip_text(snap: StatsSnapshot) -> str:
    """The key figures in one line, for the panel's compact strip."""
    shown = values(snap)
    return (f"Slots {shown['slots']} · queued {shown['queued']} · decode {shown['decode_recent']} · "
            f"prefill {shown['prefill_recent']} ({RECENT})")


class Readouts(QWidget):
    """`labels[key]` is each readout's value label (keys: WINDOWS); `windows[key]` the window it covers."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.labels: dict[str, QLabel] = {}
        self.windows = dict(WINDOWS)
        self._grid = grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(2)
        self._heading(0, 0, "Now", "now")
        self._pairs(1, NOW)
        row = 1 + len(NOW)
        self._heading(row, 0, "Rates", None)
        self._heading(row, 1, RECENT, RECENT, Qt.AlignRight)
        self._heading(row, 2, LIFETIME, LIFETIME, Qt.AlignRight)
        for i, (key, title) in enumerate(RATES, start=row + 1):
            grid.addWidget(self._caption(title, key), i, 0)
            grid.addWidget(self._value(f"{key}_recent"), i, 1)
            grid.addWidget(self._value(key), i, 2)
        row += 1 + len(RATES)
        self._heading(row, 0, "Totals, lifetime", LIFETIME, span=3)
        self._pairs(row + 1, TOTALS)

    def _heading(self, row: int, col: int, text: str, window: str | None, align=Qt.AlignLeft, span: int = 1):
        label = QLabel(text, objectName="readoutWindow", toolTip=WINDOW_TIPS.get(window, ""))
        label.setStyleSheet("font-weight: 600")
        self._grid.addWidget(label, row, col, 1, span, align | Qt.AlignVCenter)

    def _pairs(self, first_row: int, names: list[tuple[str, str]]) -> None:
        for row, (key, title) in enumerate(names, start=first_row):  # one a row: a narrow panel beside the panes
            self._grid.addWidget(self._caption(title, key), row, 0)
            self._grid.addWidget(self._value(key), row, 1)

    def _caption(self, title: str, key: str) -> QLabel:
        caption = QLabel(title, objectName="readoutCaption", toolTip=TIPS.get(key, ""))
        return caption

    def _value(self, key: str) -> QLabel:
        value = QLabel("–", objectName="readoutValue")
        value.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        value.setFixedSize(value.fontMetrics().horizontalAdvance(READOUT_SAMPLE), value.sizeHint().height())
        value.setAutoFillBackground(True)  # opaque: a new value repaints the label, not the dock beneath
        value.setToolTip(" · ".join(t for t in (TIPS.get(key.removesuffix("_recent"), ""),
                                                WINDOW_TIPS[WINDOWS[key]]) if t))
        self.labels[key] = value
        return value

    def show_snapshot(self, snap: StatsSnapshot) -> None:
        for key, text in values(snap).items():
            label = self.labels[key]
            needed = label.fontMetrics().horizontalAdvance(text)
            if needed > label.width():  # rare (huge totals): one re-layout, then fixed again
                label.setFixedWidth(needed)
            label.setText(text)

    def clear(self) -> None:
        for label in self.labels.values():
            label.setText("–")
