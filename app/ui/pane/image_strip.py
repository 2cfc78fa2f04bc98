"""The images, audio clips and videos attached to a pane's next message: a row of thumbnails (a clip: its name,
and ▶ to listen to it in the system's player: PySide6-Essentials has no QtMultimedia to play it in the window; a
video: its first frame, and how many frames the pane's rate and frame budget take of it), each
removable before Run, and the ways in — the Attach button, a paste, a drop onto the message (PromptEditor hands
those over as `incoming`).

A view of `spec.draft_images`: it renders them and calls the controller to attach or remove one; it keeps no
list of its own. A file that is not an image, is missing or too big is refused by the controller with a
sentence naming it, which the pane shows in its status; the draft is unchanged then.

Under the thumbnails, in words, a warning as soon as the pane's backend cannot read the images it holds (a local
model opened without its vision projector): what the controller's `image_warning` says, with what to do. It is
checked again when the images, the pane's backend or the open models change (`check`); the images stay.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QIcon, QImage, QPixmap
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from app.engine.vision.video import Preview, VideoDecodeError, preview
from app.session import PaneSpec, SessionController, images

THUMB = 56  # thumbnail edge, pixels
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
AUDIO_SUFFIXES = (".wav", ".mp3", ".flac", ".ogg")
VIDEO_SUFFIXES = (".mp4", ".mov", ".m4v", ".mkv", ".webm", ".avi")
IMAGE_FILTER = ("Images, audio and video (*.png *.jpg *.jpeg *.gif *.webp *.bmp *.wav *.mp3 *.flac *.ogg *.mp4 *.mov "
                "*.m4v *.mkv *.webm *.avi);;Images (*.png *.jpg *.jpeg *.gif *.webp *.bmp);;"
                "Audio (*.wav *.mp3 *.flac *.ogg);;Video (*.mp4 *.mov *.m4v *.mkv *.webm *.avi);;All files (*)")


def listen(ref: images.ImageRef) -> Path | None:
    """Open the clip in the system's audio player (a copy in the temp folder, named by its hash); its path, or
    None when its bytes are missing."""
    data = images.data(ref)
    if data is None:
        return None
    path = Path(tempfile.gettempdir()) / "chorus-clips" / ref.file_name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))
    return path


def thumbnail(ref: images.ImageRef, edge: int = THUMB) -> QPixmap | None:
    """The image scaled to fit `edge`, or None when its bytes are missing or Qt cannot decode them."""
    data = images.data(ref)
    image = QImage.fromData(data) if data else QImage()
    if image.isNull():
        return None
    return QPixmap.fromImage(image.scaled(edge, edge, Qt.KeepAspectRatio, Qt.SmoothTransformation))


@functools.lru_cache(maxsize=16)
def _preview(sha256: str) -> Preview | None:
    data = images.data(images.ImageRef(sha256))
    try:
        return preview(data) if data else None
    except VideoDecodeError:
        return None


def video_caption(ref: images.ImageRef, spec: PaneSpec) -> tuple[QPixmap | None, str]:
    """A video's first frame (None when it cannot be read) and what the pane's next run takes of it."""
    seen = _preview(ref.sha256)
    if seen is None:
        return None, f"▶ {ref.label} (cannot be read)"
    count, rate = seen.frames_at(spec.video_fps, spec.video_max_frames)
    height, width = seen.first.shape[:2]
    image = QImage(seen.first.tobytes(), width, height, 3 * width, QImage.Format_RGB888)
    pixmap = QPixmap.fromImage(image.scaled(THUMB, THUMB, Qt.KeepAspectRatio, Qt.SmoothTransformation))
    return pixmap, f"{count} frames · {rate:g} fps"


def sources(mime: QMimeData) -> list:
    """What a paste or drop carries that can become images: local image files (by suffix; the controller checks
    the bytes), else the image itself as PNG bytes (a screenshot in the clipboard). Empty when it carries neither
    (plain text, other files: left to the editor)."""
    files = [url.toLocalFile() for url in mime.urls() if url.isLocalFile()
             and url.toLocalFile().lower().endswith(IMAGE_SUFFIXES + AUDIO_SUFFIXES + VIDEO_SUFFIXES)] \
        if mime.hasUrls() else []
    if files:
        return files
    if mime.hasImage():
        image = QImage(mime.imageData())
        if not image.isNull():
            data = QByteArray()
            buffer = QBuffer(data)
            buffer.open(QIODevice.WriteOnly)
            image.save(buffer, "PNG")
            return [bytes(data.data())]
    return []


class ImageStrip(QWidget):
    sig_problem = Signal(str)
    """An image could not be attached: the sentence naming it and why."""

    def __init__(self, spec: PaneSpec, controller: SessionController, parent: QWidget | None = None,
                 choose: Callable[[], list[str]] | None = None):
        super().__init__(parent)
        self.spec, self.controller = spec, controller
        self._choose = choose or self._ask_files
        self.attach_button = QToolButton(text="Attach…", autoRaise=True,
                                          toolTip="Attach images, audio clips (wav, mp3, flac, ogg) or videos (mp4, "
                                                  "mov, mkv, webm, avi) to the next message (or paste or drop them "
                                                  "onto it)")
        self.attach_button.clicked.connect(self.attach_chosen)
        self.warning = QLabel(objectName="imageWarning", wordWrap=True)
        self.warning.hide()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        self._layout = QHBoxLayout()
        self._layout.setSpacing(4)
        self._layout.addWidget(self.attach_button)
        self._layout.addStretch(1)
        column.addLayout(self._layout)
        column.addWidget(self.warning)
        self.thumbs: list[QToolButton] = []
        self.players: list[QToolButton] = []  # ▶ beside each clip: listen to it (`listen`)
        self.render()

    def render(self) -> None:
        """One thumbnail per attached image, one name per clip (a missing one says so), each removing it when
        clicked; a clip has ▶ beside it to listen to it."""
        for button in self.thumbs + self.players:
            self._layout.removeWidget(button)
            button.deleteLater()
        self.thumbs, self.players = [], []
        for ref in self.spec.draft_images:
            pixmap = None if ref.is_audio or ref.is_video else thumbnail(ref)
            button = QToolButton(toolTip=f"{ref.label} — click to remove it from the message", autoRaise=True)
            button.setObjectName("imageThumb")
            if ref.is_video and images.data(ref) is not None:
                frame, caption = video_caption(ref, self.spec)
                button.setText(caption)
                button.setToolTip(f"{ref.label}: {caption} — click to remove it from the message")
                if frame is not None:
                    button.setIcon(QIcon(frame))
                    button.setIconSize(QSize(THUMB, THUMB))
                    button.setToolButtonStyle(Qt.ToolButtonTextUnderIcon)
            elif pixmap is not None:
                button.setIcon(QIcon(pixmap))
                button.setIconSize(QSize(THUMB, THUMB))
            elif images.data(ref) is None:
                button.setText(f"⚠ {ref.label} (missing)")
            else:
                button.setText(f"♪ {ref.label}")
            button.clicked.connect(lambda _=False, r=ref: self.controller.detach_image(self.spec, r))
            self._layout.insertWidget(1 + len(self.thumbs) + len(self.players), button)
            self.thumbs.append(button)
            if ref.is_audio and images.data(ref) is not None:
                play = QToolButton(text="▶", autoRaise=True, toolTip=f"Listen to {ref.label} in the system's player")
                play.setObjectName("clipPlay")
                play.clicked.connect(lambda _=False, r=ref: listen(r))
                self._layout.insertWidget(1 + len(self.thumbs) + len(self.players), play)
                self.players.append(play)
        self.check()

    def check(self) -> None:
        """Show, or take away, the warning that the pane's backend cannot read its images."""
        text = self.controller.image_warning(self.spec)
        self.warning.setText(f"⚠ {text}" if text else "")
        self.warning.setVisible(bool(text))

    def incoming(self, items: list) -> None:
        """Attach each path or bytes (a paste, a drop); each refused one is reported, the others still attach."""
        for item in items:
            try:
                self.controller.attach_image(self.spec, item)
            except images.ImageError as exc:
                self.sig_problem.emit(str(exc))

    def attach_chosen(self) -> None:
        self.incoming(self._choose())

    def _ask_files(self) -> list[str]:
        paths, _ = QFileDialog.getOpenFileNames(self, "Attach images, audio or video", "", IMAGE_FILTER)
        return paths
