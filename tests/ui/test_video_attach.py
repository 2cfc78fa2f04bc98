"""Videos on a pane's next message: attached by the button or a drop, shown by their first frame with how many
frames the pane's rate and frame budget take, removed by a click before Run; a pane whose model cannot see warns at
once, naming the model as the status bar does, and the video stays; a sent video is named in its turn."""

import os

from PySide6.QtCore import QMimeData, Qt, QUrl

from app.models import model_name
from app.session import images
from app.session.conversation import commit_run, plan_run
from tests.fixtures.video_files import sample_video
from tests.ui.conftest import load_window


def test_attach_and_remove_a_video_with_its_frame_count_and_a_model_that_cannot_see_warns(
        window, loop, model_path, settings, tmp_path, qtbot):
    pane = window.grid.panes[0]
    spec = pane.spec
    walk, run = tmp_path / "walk.mkv", tmp_path / "run.mkv"
    walk.write_bytes(sample_video(0, seconds=2.0, rate=8))
    run.write_bytes(sample_video(1, seconds=1.0, rate=25))
    pane.images._choose = lambda: [str(walk)]
    qtbot.mouseClick(pane.images.attach_button, Qt.LeftButton)
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(run))])
    pane.prompt.insertFromMimeData(dropped)  # what a drop does
    assert [(r.name, r.mime) for r in spec.draft_images] == [("walk.mkv", "video/x-matroska")] * 1 + \
        [("run.mkv", "video/x-matroska")]
    assert [b.text() for b in pane.images.thumbs] == ["8 frames · 4 fps", "4 frames · 4 fps"]
    assert all(not b.icon().isNull() for b in pane.images.thumbs) and not pane.images.players
    spec.video_max_frames = 5  # a budget spreads the frames: 5 over 2 s
    pane.images.render()
    assert pane.images.thumbs[0].text() == "5 frames · 2.5 fps"

    load_window(window, loop, model_path, settings)  # the embedded model has no projector: it cannot see
    said = pane.images.warning.text() if pane.images.warning.isVisible() else ""
    assert said.startswith(f"⚠ {model_name(model_path)} was opened without a vision projector (mmproj), so it "
                           "cannot watch videos") and "videos stay attached" in said and len(spec.draft_images) == 2
    if os.environ.get("CHORUS_SHOTS"):
        spec.draft = "What moves in these videos?"
        pane.prompt.setPlainText(spec.draft)
        window.resize(1100, 700)
        qtbot.wait(50)
        window.grab().save(os.path.join(os.environ["CHORUS_SHOTS"], "video-attached.png"))

    qtbot.mouseClick(pane.images.thumbs[1], Qt.LeftButton)  # remove the second before Run
    assert [r.name for r in spec.draft_images] == ["walk.mkv"]
    spec.draft = "What moves?"
    commit_run(spec, plan_run(spec)[1])
    assert spec.turns[-1]["images"] == (images.add_file(walk),)
    pane.output.render(spec)
    assert "▶ walk.mkv" in pane.output.toPlainText() and "🖼" not in pane.output.toPlainText()


def test_a_pane_watches_a_video_on_a_model_with_its_projector(window, loop, model_path, settings, tmp_path, qtbot):
    from app.ui import settings as keys
    from tests.fixtures.vision_gguf import tiny_mmproj
    from tests.ui.conftest import wait_until

    settings.set(keys.SLOTS, 2)
    settings.set(keys.CONTEXT_PER_SLOT, 1024)
    assert loop.run_until_complete(window.models.load_model(str(model_path), mmproj=str(tiny_mmproj()))) is not None
    pane = window.grid.panes[0]
    walk = tmp_path / "walk.mkv"
    walk.write_bytes(sample_video(0, seconds=1.0, rate=8))
    pane.images._choose = lambda: [str(walk)]
    qtbot.mouseClick(pane.images.attach_button, Qt.LeftButton)
    assert not pane.images.warning.isVisible() and pane.images.thumbs[0].text() == "4 frames · 4 fps"
    pane.prompt.setPlainText("What moves in this video?")
    pane.spec.max_tokens = 12
    pane.run_button.click()
    wait_until(loop, lambda: not pane.busy and pane.spec.result.text, timeout=120)
    assert pane.spec.result.error is None and pane.spec.result.prompt_tokens > 4 * 64
    assert "▶ walk.mkv" in pane.output.toPlainText()
    assert window.bridge.stats().frames_encoded == 4
    if os.environ.get("CHORUS_SHOTS"):
        window.resize(1100, 700)
        qtbot.wait(50)
        window.grab().save(os.path.join(os.environ["CHORUS_SHOTS"], "video-watched.png"))


def test_the_stats_panel_reads_video_frames_encoded_and_reused(qtbot):
    from app.engine.stats import StatsRecorder
    from app.ui.stats.readouts import Readouts

    recorder = StatsRecorder(n_slots=8, n_ctx_per_slot=512)
    readouts = Readouts()
    qtbot.addWidget(readouts)
    readouts.show_snapshot(recorder.snapshot())
    assert readouts.labels["frames"].text() == "–"
    recorder.record_images(frames_in_prompts=32, frames_encoded=4)  # 8 panes on one 4-frame video
    readouts.show_snapshot(recorder.snapshot())
    assert readouts.labels["frames"].text() == "4 / 28" and readouts.labels["images"].text() == "–"
    recorder.reset()
    readouts.show_snapshot(recorder.snapshot())
    assert readouts.labels["frames"].text() == "–"


def test_a_pane_with_a_video_sets_its_rate_and_frame_budget_in_the_pane(window, tmp_path, qtbot):
    from app.engine import limits

    pane = window.grid.panes[0]
    spec, fields = pane.spec, pane.video_fields
    assert not fields.isVisibleTo(pane)  # no video: nothing to sample
    walk = tmp_path / "walk.mkv"
    walk.write_bytes(sample_video(0, seconds=2.0, rate=8))
    pane.images._choose = lambda: [str(walk)]
    qtbot.mouseClick(pane.images.attach_button, Qt.LeftButton)
    assert fields.isVisibleTo(pane) and fields.read() == (limits.VIDEO_FPS.default, limits.VIDEO_MAX_FRAMES.default)
    assert fields.max_frames.text() == "none" and pane.images.thumbs[0].text() == "8 frames · 4 fps"

    fields.max_frames.setValue(5)  # typed in the pane: the spec, and the caption, follow
    assert spec.video_max_frames == 5 and pane.images.thumbs[0].text() == "5 frames · 2.5 fps"
    fields.fps.setValue(0)
    assert spec.video_fps == 0 and fields.fps.text() == "own rate"
    spec.video_fps, spec.video_max_frames = 2.0, 0  # as a session or a sweep sets them: the fields follow
    assert fields.read() == (2.0, 0) and pane.images.thumbs[0].text() == "4 frames · 2 fps"
    if os.environ.get("CHORUS_SHOTS"):
        spec.draft = "What moves in this video?"
        window.resize(1100, 700)
        qtbot.wait(50)
        window.grab().save(os.path.join(os.environ["CHORUS_SHOTS"], "video-fields.png"))

    spec.draft = "What moves?"
    commit_run(spec, plan_run(spec)[1])  # sent: it is in the conversation, sent again with every run
    assert not spec.draft_images and fields.isVisibleTo(pane)
    controller = window.controller
    controller.clear(spec)
    assert not fields.isVisibleTo(pane)
