"""Images on a pane's next message: attached by the button, a paste or a drop, shown as thumbnails, removed by a
click before Run; a file that is not an image is named in the pane's status and nothing changes. (No model: the
attachments are the session's, and the model adds nothing here.)"""

from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QImage

from tests.fixtures.images import write_png


def test_attach_paste_drop_and_remove_images_before_run(window, tmp_path, qtbot):
    pane = window.grid.panes[0]
    spec = pane.spec
    pane.prompt.setPlainText("")
    red = write_png(tmp_path / "red.png", rgb=(255, 0, 0))
    pane.images._choose = lambda: [str(red)]  # the file dialog's answer
    qtbot.mouseClick(pane.images.attach_button, Qt.LeftButton)
    assert [r.name for r in spec.draft_images] == ["red.png"]
    assert len(pane.images.thumbs) == 1 and not pane.images.thumbs[0].icon().isNull()

    pasted = QMimeData()
    image = QImage(8, 6, QImage.Format_RGB32)
    image.fill(Qt.blue)
    pasted.setImageData(image)
    assert pane.prompt.canInsertFromMimeData(pasted)
    pane.prompt.insertFromMimeData(pasted)  # what Ctrl+V does
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(write_png(tmp_path / "green.png", rgb=(0, 255, 0))))])
    pane.prompt.insertFromMimeData(dropped)  # what a drop does
    assert [r.mime for r in spec.draft_images] == ["image/png"] * 3
    assert spec.draft_images[2].name == "green.png" and len(pane.images.thumbs) == 3
    assert pane.prompt.toPlainText() == ""  # images never land in the text

    text = QMimeData()
    text.setText("What is in these pictures?")
    pane.prompt.insertFromMimeData(text)  # plain text still pastes as text
    assert spec.draft == "What is in these pictures?"

    bad = tmp_path / "notes.png"
    bad.write_text("just words")
    dropped_bad = QMimeData()
    dropped_bad.setUrls([QUrl.fromLocalFile(str(bad))])
    pane.prompt.insertFromMimeData(dropped_bad)
    assert "notes.png is not an image" in pane.status.text() and len(spec.draft_images) == 3

    qtbot.mouseClick(pane.images.thumbs[0], Qt.LeftButton)  # remove red before Run
    assert [r.name for r in spec.draft_images] == ["", "green.png"] and len(pane.images.thumbs) == 2


def test_open_model_finds_the_projector_beside_the_file_or_asks_for_one(window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    from tests.fixtures.app_trees import write_gguf

    model = write_gguf(tmp_path / "vlm" / "SmolVLM-Q8_0.gguf")
    projector = write_gguf(tmp_path / "vlm" / "mmproj-SmolVLM-f16.gguf", arch="clip")
    assert window.models.projector_for(str(model)) == str(projector)
    text = write_gguf(tmp_path / "text" / "plain-Q8_0.gguf")
    assert window.models.projector_for(str(text)) is None
    chosen = write_gguf(tmp_path / "elsewhere" / "mmproj-plain.gguf", arch="clip")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.Yes)  # "choose one?" -> yes
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(chosen), ""))
    assert window.models.ask_projector(str(text)) == str(chosen)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.No)  # text only
    assert window.models.ask_projector(str(text)) is None
