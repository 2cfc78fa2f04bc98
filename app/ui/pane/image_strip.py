"""The images attached to a pane's next message: a row of thumbnails, each removable before Run, and the ways in
— the Attach button, a paste, a drop onto the message (PromptEditor hands those over as `incoming`).

A view of `spec.draft_images`: it renders them and calls the controller to attach or remove one; it keeps no
list of its own. A file that is not an image, is missing or too big is refused by the controller with a
sentence naming it, which the pane shows in its status; the draft is unchanged then.

Under the thumbnails, in words, a warning as soon as the pane's backend cannot read the images it holds (a local
model opened without its vision projector): what the controller's `image_warning` says, with what to do. It is
checked again when the images, the pane's backend or the open models change (`check`); the images stay.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QIcon, QImage, QPixmap
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from app.session import PaneSpec, SessionController, images

THUMB = 56  # thumbnail edge, pixels
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.gif *.webp *.bmp);;All files (*)"


def thumbnail(ref: images.ImageRef, edge: int = THUMB) -> QPixmap | None:
    """The image scaled to fit `edge`, or None when its bytes are missing or Qt cannot decode them."""
    data = images.data(ref)
    image = QImage.fromData(data) if data else QImage()
    if image.isNull():
        return None
    return QPixmap.fromImage(image.scaled(edge, edge, Qt.KeepAspectRatio, Qt.SmoothTransformation))


def sources(mime: QMimeData) -> list:
    """What a paste or drop carries that can become images: local image files (by suffix; the controller checks
    the bytes), else the image itself as PNG bytes (a screenshot in the clipboard). Empty when it carries neither
    (plain text, other files: left to the editor)."""
    files = [url.toLocalFile() for url in mime.urls() if url.isLocalFile()
             and url.toLocalFile().lower().endswith(IMAGE_SUFFIXES)] if mime.hasUrls() else []
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
        self.attach_button = QToolButton(text="Attach image…", autoRaise=True,
                                          toolTip="Attach images to the next message (or paste or drop them onto it)")
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
        self.render()

    def render(self) -> None:
        """One thumbnail per attached image (a missing one shows its name), each removing it when clicked."""
        for button in self.thumbs:
            self._layout.removeWidget(button)
            button.deleteLater()
        self.thumbs = []
        for i, ref in enumerate(self.spec.draft_images):
            pixmap = thumbnail(ref)
            button = QToolButton(toolTip=f"{ref.label} — click to remove it from the message", autoRaise=True)
            button.setObjectName("imageThumb")
            if pixmap is not None:
                button.setIcon(QIcon(pixmap))
                button.setIconSize(QSize(THUMB, THUMB))
            else:
                button.setText(f"⚠ {ref.label} (missing)")
            button.clicked.connect(lambda _=False, r=ref: self.controller.detach_image(self.spec, r))
            self._layout.insertWidget(1 + i, button)
            self.thumbs.append(button)
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
        paths, _ = QFileDialog.getOpenFileNames(self, "Attach images", "", IMAGE_FILTER)
        return paths
