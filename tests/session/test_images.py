"""Images in conversations: attached by file or bytes, sent as OpenAI data-URL parts, saved beside the session by
content hash, reloaded, and a missing one named while the rest loads."""

import base64
import hashlib

import pytest

from app.session import images, store
from app.session.autosave import Autosaver
from app.session.conversation import commit_run, plan_run, start_edit
from app.session.session import Session
from app.session.state import PaneSpec
from tests.conftest import TEST_THREADS
from tests.fixtures.images import png, write_png


@pytest.fixture
def fresh_store(monkeypatch):
    """An empty image store, as in a new process."""
    monkeypatch.setattr(images, "_store", {})


def _pane_with_image(tmp_path, text="What colour is this?"):
    pane = PaneSpec(draft=text)
    ref = images.add_file(write_png(tmp_path / "red.png"))
    pane.draft_images = (ref,)
    return pane, ref


def test_a_draft_image_becomes_a_data_url_part_and_moves_into_the_turn(tmp_path, fresh_store):
    pane, ref = _pane_with_image(tmp_path)
    request, turns = plan_run(pane)
    parts = request.messages[-1]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"] and parts[1]["text"] == "What colour is this?"
    url = parts[0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == png()
    assert ref.sha256 == hashlib.sha256(png()).hexdigest() and ref.name == "red.png"
    commit_run(pane, turns)
    assert pane.turns == [{"role": "user", "content": "What colour is this?", "images": (ref,)}]
    assert pane.draft == "" and pane.draft_images == ()
    start_edit(pane, 0)  # rewriting the message brings its image back to the draft
    assert pane.draft_images == (ref,)


def test_an_image_alone_can_be_run(tmp_path, fresh_store):
    pane, _ = _pane_with_image(tmp_path, text="")
    request, _ = plan_run(pane)
    assert [p["type"] for p in request.messages[-1]["content"]] == ["image_url", "text"]


def test_a_saved_session_reopens_with_its_images(tmp_path, monkeypatch, fresh_store):
    pane, ref = _pane_with_image(tmp_path)
    commit_run(pane, plan_run(pane)[1])
    draft_ref = images.add_bytes(png(rgb=(0, 0, 255)), "pasted")
    pane.draft_images = (draft_ref,)
    session = Session()
    session.adopt(pane)
    path = tmp_path / "talk.chorus.json"
    session.save(path)
    folder = tmp_path / "talk.images"
    assert sorted(p.name for p in folder.iterdir()) == sorted([ref.file_name, draft_ref.file_name])
    assert (folder / ref.file_name).read_bytes() == png()

    monkeypatch.setattr(images, "_store", {})  # a new process
    loaded = Session.load(path)
    assert loaded.panes[0].turns[0]["images"] == (ref,) and loaded.panes[0].draft_images == (draft_ref,)
    assert images.data(ref) == png() and loaded.missing_images(path) is None
    assert plan_run(loaded.panes[0], use_draft=False)[0].messages[-1]["content"][0]["type"] == "image_url"


def test_a_missing_image_is_named_and_the_rest_loads_and_is_kept(tmp_path, monkeypatch, fresh_store):
    pane, ref = _pane_with_image(tmp_path)
    commit_run(pane, plan_run(pane)[1])
    pane.draft = "And now?"
    session = Session()
    session.adopt(pane)
    path = tmp_path / "talk.chorus.json"
    session.save(path)
    (tmp_path / "talk.images" / ref.file_name).unlink()
    monkeypatch.setattr(images, "_store", {})

    loaded = Session.load(path)
    note = loaded.missing_images(path)
    assert "red.png" in note and "talk.images" in note and "1 image(s)" in note
    assert loaded.panes[0].turns[0]["content"] == "What colour is this?" and loaded.panes[0].draft == "And now?"
    with pytest.raises(images.ImageError, match="Pane 1: the image red.png is missing"):
        plan_run(loaded.panes[0])
    loaded.save(tmp_path / "again.chorus.json")  # saving again keeps the reference: nothing is lost
    assert Session.load(tmp_path / "again.chorus.json").panes[0].turns[0]["images"] == (ref,)


def test_an_altered_image_file_counts_as_missing(tmp_path, monkeypatch, fresh_store):
    pane, ref = _pane_with_image(tmp_path)
    session = Session()
    session.adopt(pane)
    path = tmp_path / "s.chorus.json"
    session.save(path)
    (tmp_path / "s.images" / ref.file_name).write_bytes(png(rgb=(1, 2, 3)))
    monkeypatch.setattr(images, "_store", {})
    assert "red.png" in Session.load(path).missing_images(path)


def test_bad_image_files_are_named_and_nothing_changes(tmp_path, fresh_store):
    pane = PaneSpec(draft="hi")
    text = tmp_path / "notes.png"
    text.write_text("not a picture")
    with pytest.raises(images.ImageError, match=r"notes.png is not an image or clip Chorus can send \(PNG, JPEG"):
        images.add_file(text)
    with pytest.raises(images.ImageError, match="image not found: .*gone.png"):
        images.add_file(tmp_path / "gone.png")
    huge = tmp_path / "huge.png"
    with huge.open("wb") as f:
        f.truncate(images.MAX_BYTES + 1)
    with pytest.raises(images.ImageError, match="huge.png is 20.0 MB; an image may be at most 20 MB"):
        images.add_file(huge)
    with pytest.raises(images.ImageError, match="is empty"):
        images.add_bytes(b"", "clipboard")
    with pytest.raises(images.ImageError, match="not a base64 data URL"):
        images.add_data_url("http://example.com/cat.png", "line 3")
    assert pane.draft == "hi" and pane.draft_images == ()


def test_a_hand_edited_image_reference_is_refused_with_its_field(tmp_path):
    path = tmp_path / "bad.chorus.json"
    path.write_text('{"format": "chorus-session", "version": 2, "panes": [{"turns": '
                    '[{"role": "user", "content": "x", "images": [{"sha256": "nope"}]}]}]}')
    with pytest.raises(store.SessionFileError, match="pane 1, turn 1, image 1.*64 lowercase hex"):
        Session.load(path)


def test_the_autosave_writes_its_images_before_the_session(tmp_path, monkeypatch, fresh_store):
    pane, ref = _pane_with_image(tmp_path)
    session = Session()
    session.adopt(pane)
    saver = Autosaver(tmp_path / "autosave.chorus.json")
    try:
        saver.save(session, None, True)
        assert saver.flush(30)
    finally:
        saver.close()
    assert (tmp_path / "autosave.images" / ref.file_name).read_bytes() == png()
    monkeypatch.setattr(images, "_store", {})
    restored = Autosaver(tmp_path / "autosave.chorus.json")
    try:
        back = restored.restore().session
    finally:
        restored.close()
    assert back.panes[0].draft_images == (ref,) and images.data(ref) == png()


def test_a_local_model_without_a_projector_refuses_an_image_naming_the_pane(tmp_path, model_path, fresh_store):
    from app.session import BackendRegistry, BackendSpec
    from app.session.runner import SessionRunner

    registry = BackendRegistry(lambda event: None)
    spec = registry.open(BackendSpec(kind="local", path=str(model_path)),
                         engine={"n_slots": 1, "n_ctx_per_slot": 256, "n_threads": TEST_THREADS})
    try:
        runner = SessionRunner(registry)
        pane, ref = _pane_with_image(tmp_path)
        pane.backend, pane.title = spec.name, "Captions"
        with pytest.raises(ValueError, match="Captions: .* was opened without a vision projector"):
            runner.run(pane)
        assert pane.draft == "What colour is this?" and pane.draft_images == (ref,) and pane.turns == []
        assert runner.active == 0
    finally:
        registry.close_all()


def test_exports_show_images_by_path(tmp_path, fresh_store):
    import json

    from app.session import export

    pane, ref = _pane_with_image(tmp_path)
    commit_run(pane, plan_run(pane)[1])
    session = Session()
    session.adopt(pane)
    line = json.loads(export.to_jsonl(session, images_dir="talk.images"))
    assert line["turns"][0]["images"] == [{"name": "red.png", "sha256": ref.sha256,
                                           "path": f"talk.images/{ref.sha256}.png"}]
    assert f"![red.png](talk.images/{ref.sha256}.png)" in export.to_markdown(session, images_dir="talk.images")


def test_a_sweep_varies_the_image_over_a_folder_and_a_list(tmp_path, fresh_store):
    from app.session import sweep

    folder = tmp_path / "pics"
    folder.mkdir()
    for name, rgb in (("b.png", (0, 0, 255)), ("a.png", (255, 0, 0))):
        write_png(folder / name, rgb=rgb)
    (folder / "notes.txt").write_text("not an image")
    extra = write_png(tmp_path / "green.png", rgb=(0, 255, 0))
    base = PaneSpec(draft="What colour?")
    panes = sweep.expand(base, {"image": [str(folder), str(extra)], "temperature": [0.0, 0.5]})
    assert [(p.draft_images[0].name, p.sampling.temperature) for p in panes] == [
        ("a.png", 0.0), ("a.png", 0.5), ("b.png", 0.0), ("b.png", 0.5), ("green.png", 0.0), ("green.png", 0.5)]
    assert all(p.draft == "What colour?" for p in panes) and base.draft_images == ()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="image: the folder .*empty holds no PNG"):
        sweep.expand(base, {"image": [str(empty)]})
    with pytest.raises(ValueError, match="image = .*gone.png.*image not found"):
        sweep.expand(base, {"image": [str(tmp_path / "gone.png")]})


def test_a_version_keeps_its_images_by_hash_through_save_and_load(tmp_path, monkeypatch, fresh_store):
    from app.session import versions
    from app.session.result import PaneResult, RunState

    pane, ref = _pane_with_image(tmp_path)
    request, turns = plan_run(pane)
    commit_run(pane, turns)
    versions.begin(pane, list(request.messages), PaneResult(state=RunState.DONE, text="Red."))
    kept = pane.versions[-1].messages[-1]
    assert kept["content"] == "What colour is this?" and "base64" not in repr(kept)  # the hash, not the bytes
    assert pane.versions[-1].turns[0]["images"] == (images.ImageRef(ref.sha256),)
    assert pane.versions[-1].image_refs == [images.ImageRef(ref.sha256)]  # read without building the turns
    session = Session()
    session.adopt(pane)
    pane.turns, pane.draft_images = [], []  # only the version names the image now: the file still keeps it
    from app.session import schema
    assert schema.image_refs(session) == [images.ImageRef(ref.sha256)]
    path = tmp_path / "talk.chorus.json"
    session.save(path)
    monkeypatch.setattr(images, "_store", {})  # a new process
    loaded = Session.load(path).panes[0]
    assert loaded.versions[-1].turns[0]["images"][0].sha256 == ref.sha256 and images.data(ref) == png()
