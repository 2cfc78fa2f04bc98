"""Sessions on disk: round trips, exports, every kind of bad file, and the autosave's recovery."""

import json

import pytest

from app.engine import SamplingParams
from app.session import (
    PaneResult,
    PaneSpec,
    RunState,
    Session,
    SessionFileError,
    autosave,
    evaluation_file,
    export,
    store,
)

UNICODE = "emoji 🙂🚀, RTL مرحبا שלום, CJK 你好, combining é, tab\t and a quote \" \\ "


def sample_session() -> Session:
    chat = PaneSpec(title="Chat", system="Be brief. " + UNICODE,
                    turns=[{"role": "user", "content": "Hi " + UNICODE}, {"role": "assistant", "content": "Hello!"},
                           {"role": "user", "content": "And now?"}],
                    sampling=SamplingParams(temperature=0.7, seed=3, top_k=20), max_tokens=64, stop=("\n\n", "END"),
                    draft="a draft in progress")
    chat.result = PaneResult(state=RunState.DONE, text="Now this.", token_ids=[5, 6, 7], finish_reason="stop",
                             prompt_tokens=40, generated_tokens=3, cached_tokens=12, queue_wait_s=0.01,
                             ttft_s=0.2, decode_tps=31.5)
    plain = PaneSpec(turns=[{"role": "user", "content": "Name a fruit."}], sampling=SamplingParams(temperature=0))
    return Session(panes=[chat, plain], view={"columns": 3})


def test_round_trip_keeps_conversations_results_settings_and_unicode(tmp_path):
    session = sample_session()
    path = tmp_path / f"s{store.SUFFIX}"
    session.save(path)
    loaded = Session.load(path)
    assert loaded == session
    assert loaded.panes[0].result.cached_tokens == 12 and loaded.panes[0].stop == ("\n\n", "END")
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == "chorus-session"


def test_a_run_that_was_streaming_comes_back_interrupted_with_its_text(tmp_path):
    session = sample_session()
    session.panes[1].result = PaneResult(state=RunState.GENERATING, text="Apples are")
    session.save(tmp_path / "s.json")
    back = Session.load(tmp_path / "s.json").panes[1].result
    assert back.state == RunState.INTERRUPTED and back.text == "Apples are"


def test_markdown_and_jsonl_exports_carry_every_prompt_and_output():
    session = sample_session()
    md = session.to_markdown()
    for pane in session.panes:
        for turn in pane.turns:
            assert turn["content"].splitlines()[0] in md
    assert "Now this." in md and "Hello!" in md  # the last reply (not yet a turn) and an earlier one
    assert "Be brief." in md and "TTFT 0.20 s" in md and "12 cached" in md
    assert "T 0.7" in md and "T 0" in md  # the setting that differs is named per pane
    lines = [json.loads(line) for line in export.to_jsonl(session).splitlines()]
    assert [line["id"] for line in lines] == [p.id for p in session.panes]
    assert lines[0]["text"] == "Now this." and lines[0]["settings"]["seed"] == "3"


@pytest.mark.parametrize("content, message", [
    (None, "ends early (truncated?)"),  # the first half of a real session file
    (b"\x89PNG\r\n\x1a\n\x00\x00binary", "not a Chorus session file (not text)"),
    (b'{"hello": "world"}', "not a Chorus session file"),
    (b"[1, 2, 3]", "not a Chorus session file"),
    (b'{"format": "chorus-session", "version": 99, "panes": []}', "saved by a newer Chorus (session format 99)"),
    (b'{"format": "chorus-session", "version": 1, "panes": [{"sampling": {"temperature": 9}}]}',
     "pane 1, sampling: temperature must be in [0, 2], got 9"),
    (b'{"format": "chorus-session", "version": 1, "panes": [{"turns": [{"role": "robot"}]}]}',
     "pane 1, turn 1, role: 'robot' is not one of the allowed values"),
    (b"not json at all", "not valid JSON (line 1)"),
    # bytes that are not UTF-8 in a field this version skips: refused as the rest (the decoder does not look)
    (b'{"format": "chorus-session", "version": 2, "later": "\xff", "panes": []}', "(not text)"),
    # a newer file whose fields this version cannot read is named as newer first
    (b'{"format": "chorus-session", "version": 99, "panes": 7}', "saved by a newer Chorus (session format 99)"),
])
def test_bad_files_raise_a_clear_error_and_are_left_as_they_were(tmp_path, content, message):
    path = tmp_path / "bad.chorus.json"
    if content is None:
        sample_session().save(path)
        content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)
    with pytest.raises(SessionFileError, match="bad.chorus.json cannot be opened|not a Chorus") as error:
        Session.load(path)
    assert message in str(error.value)
    assert path.read_bytes() == content  # reading never changes the file


def test_text_is_checked_a_piece_at_a_time_across_the_pieces_edges():
    text = "Œuvre — 灯台 🗼 ".encode() * 50
    assert all(store._is_utf8(text, chunk) for chunk in (1, 2, 3, 5, 1 << 20))
    assert not any(store._is_utf8(text[:-2], chunk) for chunk in (1, 3, 1 << 20))  # cut inside the last character
    assert not store._is_utf8(text[:100] + b"\xc0\xaf" + text[100:], 7)


def test_unreadable_autosave_is_moved_aside_never_deleted(tmp_path):
    path = tmp_path / autosave.AUTOSAVE_NAME
    assert autosave.restore(path) == autosave.Restored()  # first launch: nothing to restore, nothing to say
    path.write_bytes(b'{"format": "chorus-session", "version": 1, "panes": [')
    restored = autosave.restore(path)
    session, message = restored.session, restored.message
    kept = list(tmp_path.glob(f"{autosave.AUTOSAVE_NAME}.unreadable-*"))
    assert session is None and len(kept) == 1 and not path.exists()
    assert kept[0].read_bytes() == b'{"format": "chorus-session", "version": 1, "panes": ['
    assert "could not be restored" in message and kept[0].name in message
    good = sample_session()
    good.save(path)
    assert autosave.restore(path) == autosave.Restored(session=good)


def test_autosave_folder_follows_the_environment_override(tmp_path, monkeypatch):
    monkeypatch.setenv(autosave.DATA_DIR_ENV, str(tmp_path / "data"))
    assert autosave.autosave_path() == tmp_path / "data" / autosave.AUTOSAVE_NAME
    monkeypatch.delenv(autosave.DATA_DIR_ENV)
    assert autosave.autosave_path().parent.name == "Chorus"


def test_saved_files_honour_the_umask_and_keep_an_existing_mode(tmp_path):
    """Before the fix every save and export was created 0600 (mkstemp's mode), whatever the umask."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = tmp_path / "a.chorus.json"
        sample_session().save(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        os.chmod(path, 0o600)
        sample_session().save(path)  # an existing file keeps the mode its owner gave it
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        os.umask(0o002)
        store.write_atomic(tmp_path / "export.md", "# hi\n")
        assert stat.S_IMODE((tmp_path / "export.md").stat().st_mode) == 0o664
    finally:
        os.umask(old)


V1_FILE = {  # as Chorus wrote it before pane numbers (format version 1)
    "format": "chorus-session", "version": 1, "saved_at": "2026-11-01T10:00:00+0000",
    "view": {"columns": 3, "file": "/home/u/work.chorus.json", "unsaved": True},
    "panes": [
        {"id": "aaa", "title": "", "system": "Be brief.", "turns": [{"role": "user", "content": "Hi"}],
         "draft": "", "editing": None,
         "sampling": {"temperature": 0.7, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0,
                      "frequency_penalty": 0.0, "presence_penalty": 0.0, "penalty_last_n": 64, "seed": 3},
         "max_tokens": 64, "stop": ["END"], "backend": "local", "show_probabilities": True,
         "output_format": {"kind": "text", "text": ""}, "reply_prefix": "", "group": "g1", "rating": 4, "note": "ok",
         "result": {"state": "generating", "text": "Hel", "token_ids": [1, 2], "finish_reason": None, "error": None,
                    "error_kind": None, "prompt_tokens": 9, "generated_tokens": 2, "cached_tokens": 0,
                    "queue_wait_s": 0.0, "ttft_s": 0.1, "decode_tps": None, "reply_prefix": "", "format_note": "",
                    "backend_note": "",
                    "token_logprobs": [{"token_id": 1, "text": "He", "logprob": -0.1, "top": [[1, "He", -0.1]]},
                                       {"token_id": 2, "text": "l", "logprob": -0.5, "top": []}]}},
        {"id": "bbb", "title": "Second", "system": "", "turns": [], "draft": "Next", "editing": None,
         "sampling": {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0,
                      "frequency_penalty": 0.0, "presence_penalty": 0.0, "penalty_last_n": 64, "seed": None},
         "max_tokens": 256, "stop": [], "backend": "local", "show_probabilities": False,
         "output_format": {"kind": "json", "text": ""}, "reply_prefix": "", "group": "g1", "rating": None,
         "note": "", "result": {"state": "idle", "text": ""}}]}


def test_version_1_files_still_load_migrated(tmp_path):
    path = tmp_path / "old.chorus.json"
    path.write_text(json.dumps(V1_FILE), encoding="utf-8")
    session = Session.load(path)
    assert [p.number for p in session.panes] == [1, 2] and session.next_number == 3
    assert [p.label for p in session.panes] == ["Pane 1", "Second"] and session.view.columns == 3
    first = session.panes[0]
    assert first.result.state == RunState.INTERRUPTED and first.result.text == "Hel"
    assert [e.text for e in first.result.token_logprobs] == ["He", "l"] and first.result.token_logprobs[0].top
    assert first.sampling.seed == 3 and first.stop == ("END",) and first.rating == 4
    record = store.read_autosave(path)["autosave"]
    assert (record.file, record.unsaved) == ("/home/u/work.chorus.json", True)
    session.save(path)
    assert json.loads(path.read_text())["version"] == store.VERSION and Session.load(path) == session


def test_votes_and_an_evaluation_travel_in_the_session_file(tmp_path):
    import yaml

    from app.arena import Vote
    from app.evaluate import load_config

    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(yaml.safe_dump({"prompts": ["Say {{word}}"], "providers": ["echo"],
                                      "tests": [{"vars": {"word": "hi"}, "assert": [{"type": "contains",
                                                                                     "value": "hi"}]}]}))
    session = sample_session()
    session.evaluation = load_config(config).evaluation()
    session.votes = [Vote(a="k1", b="k2", winner="a", case_id="q1", note="clearer"),
                     Vote(a="k2", b="k3", winner="tie", source="judge", judge="SmolLM2")]
    path = tmp_path / "s.chorus.json"
    session.save(path)
    back = Session.load(path)
    assert back.votes == session.votes
    assert evaluation_file.encode(back.evaluation) == evaluation_file.encode(session.evaluation)
    data = json.loads(path.read_text())
    data["votes"][1]["winner"] = "maybe"
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match="vote 2"):
        Session.load(path)
    data = json.loads(path.read_text())
    data["votes"][1]["winner"] = "tie"
    data["evaluation"]["cells"][0]["status"] = "weird"  # not a status an evaluation cell can have
    path.write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match="evaluation, cell 1, status: 'weird' is not one of"):
        Session.load(path)


def test_decoding_pauses_the_cyclic_collector_and_restores_it_however_it_ends(monkeypatch):
    """store.decode runs with gc off (its passes over a 1,000-version file's objects took two thirds of the open
    time) and leaves gc as it found it, after a good file and after a bad one."""
    import gc

    from app.session import store

    seen = []
    real = store._decode
    monkeypatch.setattr(store, "_decode", lambda text: seen.append(gc.isenabled()) or real(text))
    good = store.encode(Session())
    assert gc.isenabled()
    store.decode(good)
    with pytest.raises(store.SessionFileError):
        store.decode('{"format": "chorus-session", "version": 1, "panes": [{"number": "x"}]}')
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        store.decode(good)
        assert not gc.isenabled()  # it was off: it stays off
    finally:
        gc.enable()
