"""Videos in conversations: attached like images and clips (the same content-addressed store), sent as
`video_url` parts at the pane's rate and frame budget, saved beside the session by sha256 and reloaded, a missing
one named; the rate and the budget are sweep axes; a local model that cannot see refuses a video, naming itself."""

import pytest

from app.engine import EngineConfig
from app.models import model_name
from app.session import images, sweep
from app.session.conversation import commit_run, plan_run
from app.session.session import Session
from app.session.state import PaneSpec
from app.session.vision import image_warning, vision_problem
from tests.fixtures.audio_gguf import tiny_audio_mmproj
from tests.fixtures.video_files import sample_video
from tests.fixtures.vision_gguf import tiny_mmproj


@pytest.fixture
def fresh_store(monkeypatch):
    monkeypatch.setattr(images, "_store", {})


def test_a_video_is_sent_at_the_panes_rate_saved_by_hash_and_a_missing_one_named(tmp_path, monkeypatch,
                                                                                 fresh_store):
    data = sample_video(0, seconds=1.0)
    (tmp_path / "walk.mkv").write_bytes(data)
    video = images.add_file(tmp_path / "walk.mkv")
    assert (video.mime, video.is_video, video.is_audio, video.file_name) == \
        ("video/x-matroska", True, False, f"{video.sha256}.mkv")
    pane = PaneSpec(draft="What moves?", draft_images=(video,), video_fps=2.0, video_max_frames=6)
    request, turns = plan_run(pane)
    part, text = request.messages[-1]["content"]
    assert part["type"] == "video_url" and part["video_url"]["name"] == "walk.mkv"
    assert part["video_url"]["url"].startswith("data:video/x-matroska;base64,")
    assert (request.video_fps, request.video_max_frames) == (2.0, 6) and text["text"] == "What moves?"
    commit_run(pane, turns)
    session = Session()
    session.adopt(pane)
    path = tmp_path / "film.chorus.json"
    session.save(path)
    folder = tmp_path / "film.images"
    assert (folder / video.file_name).read_bytes() == data

    monkeypatch.setattr(images, "_store", {})  # a new process
    loaded = Session.load(path).panes[0]
    assert loaded.turns[0]["images"] == (video,) and (loaded.video_fps, loaded.video_max_frames) == (2.0, 6)
    assert plan_run(loaded, use_draft=False)[0].messages[-1]["content"][0]["type"] == "video_url"

    (folder / video.file_name).unlink()
    monkeypatch.setattr(images, "_store", {})
    again = Session.load(path)
    note = again.missing_images(path)
    assert "1 video(s) are missing" in note and "walk.mkv" in note
    with pytest.raises(images.ImageError, match="walk.mkv is missing"):
        plan_run(again.panes[0], use_draft=False)


def test_the_rate_and_the_frame_budget_are_sweep_axes():
    base = PaneSpec(draft="What happens?")
    panes = sweep.expand(base, {"video_fps": sweep.parse_values("video_fps", "1, 2 4"),
                                "video_max_frames": [0, 8]})
    assert [(p.video_fps, p.video_max_frames) for p in panes] == [
        (1.0, 0), (1.0, 8), (2.0, 0), (2.0, 8), (4.0, 0), (4.0, 8)]
    with pytest.raises(ValueError, match=r"video_fps = -1: video fps must be in \[0, 60\]"):
        sweep.expand(base, {"video_fps": [-1]})


@pytest.mark.parametrize("projector", [None, "audio"])
def test_a_model_that_cannot_see_refuses_a_video_naming_itself(model_path, projector, fresh_store):
    video = images.add_bytes(sample_video(1, seconds=0.5), "walk.mkv")
    pane = PaneSpec(draft="What moves?", draft_images=(video,))
    mmproj = str(tiny_audio_mmproj()) if projector else None
    config = EngineConfig(model_path=model_path, mmproj=mmproj)

    class Local:
        pass

    backend = Local()
    backend.config = config
    said = vision_problem(plan_run(pane)[0], backend)
    assert said.startswith(model_name(str(model_path)))
    assert ("without a vision projector (mmproj), so it cannot watch videos" if projector is None else
            "cannot watch videos: its projector") in said
    warning = image_warning(pane, lambda name: config, ["local"])
    assert warning.startswith(model_name(str(model_path))) and "The video stays attached" in warning
    backend.config = EngineConfig(model_path=model_path, mmproj=str(tiny_mmproj()))
    assert vision_problem(plan_run(pane)[0], backend) is None
    assert image_warning(pane, lambda name: backend.config, ["local"]) is None
