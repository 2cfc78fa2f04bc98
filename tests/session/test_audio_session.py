"""Audio clips in conversations: attached like images (the same content-addressed store), sent as OpenAI
`input_audio` parts, kept in versions with their type, saved beside the session by sha256 and reloaded, and a
missing one named while the rest loads."""

import base64

import pytest

from app.session import images
from app.session.conversation import commit_run, plan_run
from app.session.session import Session
from app.session.state import PaneSpec
from tests.fixtures.audio_gguf import encode, sample_clip
from tests.fixtures.images import png


@pytest.fixture
def fresh_store(monkeypatch):
    monkeypatch.setattr(images, "_store", {})


def test_a_clip_is_sent_as_input_audio_saved_by_hash_and_a_missing_one_named(tmp_path, monkeypatch, fresh_store):
    wav, flac = encode(sample_clip(0)), encode(sample_clip(1), "flac")
    (tmp_path / "tone.wav").write_bytes(wav)
    clip = images.add_file(tmp_path / "tone.wav")
    assert (clip.mime, clip.is_audio, clip.file_name) == ("audio/wav", True, f"{clip.sha256}.wav")
    picture = images.add_bytes(png(), "red.png")
    pane = PaneSpec(draft="What do you hear?", draft_images=(clip, picture))
    request, turns = plan_run(pane)
    audio, image, text = request.messages[-1]["content"]
    assert audio == {"type": "input_audio", "input_audio": {"data": base64.b64encode(wav).decode(), "format": "wav",
                                                            "name": "tone.wav"}}
    assert image["type"] == "image_url" and text == {"type": "text", "text": "What do you hear?"}
    commit_run(pane, turns)
    later = images.add_bytes(flac, "noise.flac")
    pane.draft_images = (later,)
    session = Session()
    session.adopt(pane)
    path = tmp_path / "talk.chorus.json"
    session.save(path)
    folder = tmp_path / "talk.images"
    assert (folder / clip.file_name).read_bytes() == wav and (folder / later.file_name).read_bytes() == flac

    monkeypatch.setattr(images, "_store", {})  # a new process
    loaded = Session.load(path)
    assert loaded.panes[0].turns[0]["images"] == (clip, picture) and loaded.panes[0].draft_images == (later,)
    assert loaded.missing_images(path) is None
    assert plan_run(loaded.panes[0], use_draft=False)[0].messages[-1]["content"][0]["type"] == "input_audio"

    (folder / clip.file_name).unlink()
    monkeypatch.setattr(images, "_store", {})
    again = Session.load(path)
    note = again.missing_images(path)
    assert "1 clip(s) are missing" in note and "tone.wav" in note and "talk.images" in note
    with pytest.raises(images.ImageError, match="the clip tone.wav is missing"):
        plan_run(again.panes[0], use_draft=False)


def test_a_file_that_is_neither_image_nor_clip_is_refused_naming_both_kinds(tmp_path, fresh_store):
    (tmp_path / "notes.wav").write_text("just words")
    with pytest.raises(images.ImageError, match="notes.wav is not an image or clip .*WAV, MP3, FLAC or OGG"):
        images.add_file(tmp_path / "notes.wav")
