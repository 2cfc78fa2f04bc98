"""Audio clips on a pane's next message: attached by the button or a drop, shown by name with ▶ to listen in the
system's player (PySide6-Essentials has no QtMultimedia), removed by a click before Run; a pane whose model cannot
hear warns at once, naming the model as the status bar does, and the clip stays; a sent clip is named in its turn."""

from PySide6.QtCore import QMimeData, Qt, QUrl

from app.models import model_name
from app.session import images
from app.session.conversation import commit_run, plan_run
from tests.fixtures.audio_gguf import encode, sample_clip
from tests.ui.conftest import load_window


def test_attach_listen_and_remove_a_clip_and_a_model_that_cannot_hear_warns(window, loop, model_path, settings,
                                                                            tmp_path, qtbot, monkeypatch):
    pane = window.grid.panes[0]
    spec = pane.spec
    wav, flac = tmp_path / "tone.wav", tmp_path / "noise.flac"
    wav.write_bytes(encode(sample_clip(0)))
    flac.write_bytes(encode(sample_clip(1), "flac"))
    pane.images._choose = lambda: [str(wav)]
    qtbot.mouseClick(pane.images.attach_button, Qt.LeftButton)
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(flac))])
    pane.prompt.insertFromMimeData(dropped)  # what a drop does
    assert [(r.name, r.mime) for r in spec.draft_images] == [("tone.wav", "audio/wav"), ("noise.flac", "audio/flac")]
    assert [b.text() for b in pane.images.thumbs] == ["♪ tone.wav", "♪ noise.flac"] and len(pane.images.players) == 2

    opened = []
    monkeypatch.setattr("app.ui.pane.image_strip.QDesktopServices.openUrl", lambda url: opened.append(url))
    qtbot.mouseClick(pane.images.players[0], Qt.LeftButton)
    assert opened and opened[0].toLocalFile().endswith(spec.draft_images[0].file_name)
    with open(opened[0].toLocalFile(), "rb") as played:
        assert played.read() == wav.read_bytes()

    load_window(window, loop, model_path, settings)  # the embedded model has no projector: it cannot hear
    warning = pane.images.warning
    assert warning.isVisible()
    assert warning.text().startswith(f"⚠ {model_name(model_path)} was opened without an audio projector (mmproj), "
                                     "so it cannot hear")
    assert "clips stay attached" in warning.text() and len(spec.draft_images) == 2

    qtbot.mouseClick(pane.images.thumbs[1], Qt.LeftButton)  # remove the flac before Run
    assert [r.name for r in spec.draft_images] == ["tone.wav"] and len(pane.images.players) == 1
    spec.draft = "What is this sound?"
    commit_run(spec, plan_run(spec)[1])
    assert spec.turns[-1]["images"] == (images.add_file(wav),)
    pane.output.render(spec)
    assert "♪ tone.wav" in pane.output.toPlainText() and "🖼" not in pane.output.toPlainText()
