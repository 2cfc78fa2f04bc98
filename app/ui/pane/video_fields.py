"""How a pane's videos are sampled: frames a second (0: each video's own rate) and the frame budget (0: none),
the pane's `video_fps` and `video_max_frames` — the same two a sweep, a run line or a session file sets.

A row under the attachments, shown while the pane has a video (on its next message or in its conversation: the
whole conversation is sent again on each run); the thumbnails above it say how many frames those values take.
Ranges and defaults are `app.engine.limits`, the numbers PaneSpec and GenerationRequest check.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from app.engine import limits
from app.session import PaneSpec
from app.ui.pane.sampler_fields import spin_box

FPS_TIP = ("Frames taken from each second of the pane's videos, as llama-server's --video-fps "
           "(own rate: every frame of the video)")
BUDGET_TIP = "Most frames a video gives: a longer video is sampled more sparsely over its whole length (none: no cap)"


def has_video(spec: PaneSpec) -> bool:
    """Whether the pane sends a video on its next run (on its draft or in its conversation)."""
    return any(ref.is_video for ref in spec.draft_images) or any(
        ref.is_video for turn in spec.turns for ref in turn.get("images", ()))


class VideoFields(QWidget):
    """`read()` -> (fps, max_frames); `load(fps, max_frames)` shows them (no sig_changed)."""

    sig_changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("videoFields")
        self.fps = spin_box(limits.VIDEO_FPS)
        self.fps.setSuffix(" fps")
        self.fps.setSpecialValueText("own rate")
        self.fps.setToolTip(FPS_TIP)
        self.max_frames = spin_box(limits.VIDEO_MAX_FRAMES)
        self.max_frames.setSuffix(" frames")
        self.max_frames.setSpecialValueText("none")
        self.max_frames.setToolTip(BUDGET_TIP)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        for widget in (QLabel("Video", toolTip=FPS_TIP), self.fps, QLabel("frame budget", toolTip=BUDGET_TIP),
                       self.max_frames):
            row.addWidget(widget)
        row.addStretch(1)
        self.fps.valueChanged.connect(self.sig_changed)
        self.max_frames.valueChanged.connect(self.sig_changed)

    def read(self) -> tuple[float, int]:
        return self.fps.value(), self.max_frames.value()

    def load(self, fps: float, max_frames: int) -> None:
        self.blockSignals(True)
        try:
            self.fps.setValue(fps)
            self.max_frames.setValue(max_frames)
        finally:
            self.blockSignals(False)

    def accessible_for(self, label: str) -> None:
        self.fps.setAccessibleName(f"Video frames a second of {label}")
        self.max_frames.setAccessibleName(f"Video frame budget of {label}")
