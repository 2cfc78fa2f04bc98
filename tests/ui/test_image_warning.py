"""An image attached to a pane whose model cannot read it (the embedded model, opened without a vision projector)
is warned about at once, in words on the pane, naming the model as the status bar does and saying what to do;
the warning follows the pane's backend and the open models, and the image stays attached throughout."""

from PySide6.QtCore import Qt

from app.backends.spec import BackendSpec
from app.models import model_name
from app.session import MAIN
from tests.fixtures.app_trees import write_gguf
from tests.fixtures.images import write_png
from tests.ui.conftest import load_window


def test_an_image_the_model_cannot_read_is_warned_about_at_attach_time(window, loop, model_path, settings,
                                                                        tmp_path, qtbot):
    pane = window.grid.panes[0]
    pane.images._choose = lambda: [str(write_png(tmp_path / "red.png", rgb=(255, 0, 0)))]
    qtbot.mouseClick(pane.images.attach_button, Qt.LeftButton)  # no model yet: nothing to say
    assert len(pane.spec.draft_images) == 1 and pane.images.warning.isHidden()

    load_window(window, loop, model_path, settings)  # the embedded model has no projector: the warning shows
    name = model_name(model_path)
    warning = pane.images.warning
    assert warning.isVisible() and not warning.text().startswith("⚠ Smollm2")
    assert warning.text().startswith(f"⚠ {name} was opened without a vision projector (mmproj)")
    assert "stays attached" in warning.text() and "Model → Open model…" in warning.text()
    assert len(pane.spec.draft_images) == 1

    second = window.grid.add_pane()  # attaching on a pane already on the model warns at once
    second.images._choose = lambda: [str(write_png(tmp_path / "blue.png", rgb=(0, 0, 255)))]
    qtbot.mouseClick(second.images.attach_button, Qt.LeftButton)
    assert second.images.warning.isVisible() and name in second.images.warning.text()

    vlm = tmp_path / "vlm" / "SmolVLM-test.gguf"  # a model waiting on standby with its projector reads images
    vlm.parent.mkdir()
    vlm.symlink_to(model_path)
    projector = write_gguf(tmp_path / "vlm" / "mmproj-SmolVLM-test.gguf", arch="clip")
    reader = window.bridge.add_standby(BackendSpec(kind="local", path=str(vlm), mmproj=str(projector)))
    assert f"run this pane on {reader.name} (it reads images)" in warning.text()
    pane.spec.backend = reader.name  # the pane moves there: nothing to warn about
    qtbot.waitUntil(lambda: warning.isHidden())
    pane.spec.backend = MAIN  # and back to a model that cannot read it
    qtbot.waitUntil(lambda: warning.isVisible())
    qtbot.mouseClick(pane.images.thumbs[0], Qt.LeftButton)  # the image removed: no warning
    assert not pane.spec.draft_images and warning.isHidden()
