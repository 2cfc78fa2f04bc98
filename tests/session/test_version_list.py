"""A pane's versions keep the finished ones packed (app/session/version_list.py): what an afternoon of
regenerating costs in memory and in the collector's work, and that nobody can tell a version was packed."""

from __future__ import annotations

import gc
import json
import weakref

from app.engine import Completion
from app.session import PaneResult, PaneSpec, RunState, Session, store, versions
from app.session.version_list import VersionList

RUNS = 300


def completion(text: str) -> Completion:
    return Completion(request_id=0, text=text, token_ids=list(range(40)), finish_reason="stop", error=None,
                      prompt_tokens=5, generated_tokens=40, queue_wait_s=0.01, ttft_s=0.1, decode_tps=20.0)


def run(pane: PaneSpec, text: str) -> PaneResult:
    """What SessionRunner.run and its pumps do to a pane, without a backend."""
    result = PaneResult(state=RunState.QUEUED, t_submit=0.0)
    versions.begin(pane, [{"role": "user", "content": "Name a colour."}], result)
    pane.result = result
    result.stream(text=text[:1], state=RunState.GENERATING, generated_tokens=1)
    result.finish(completion(text))
    versions.end(pane, result)
    return result


def regenerating(panes: int = 4, runs: int = RUNS, session: Session | None = None) -> Session:
    """A listened-to session whose panes regenerate, autosaved as the window does every few runs."""
    if session is None:
        session = Session(panes=[PaneSpec(draft=f"q{i}") for i in range(panes)])
        session.events.all.connect(lambda info: None)
    for i in range(runs):
        run(session.panes[i % len(session.panes)], f"Reply {i}: a colour, and why.")
        if i % 10 == 9:
            store.encode_compact(session)
    return session


def test_finished_versions_leave_nothing_for_the_collector_to_walk():
    session = regenerating(runs=40)  # warm: the panes' signal groups, classes and caches built
    gc.collect()
    before = len(gc.get_objects())
    regenerating(runs=RUNS, session=session)
    store.encode_compact(session)
    gc.collect()
    per_version = (len(gc.get_objects()) - before) / RUNS
    assert per_version < 0.5, f"{per_version:.1f} tracked objects per version (10 each before they were packed)"
    assert all(p.versions.packed() == len(p.versions) - 1 for p in session.panes)  # all but the shown one


def test_reading_a_packed_version_gives_it_back_and_the_autosave_is_the_same():
    session = regenerating(panes=2, runs=20)
    first = store.encode_compact(session)
    pane = session.panes[0]
    assert pane.versions.packed() == 9
    old = pane.versions[3]
    assert old.result.text == "Reply 6: a colour, and why." and old.result.token_ids == list(range(40))
    assert old.messages == [{"role": "user", "content": "Name a colour."}] and old.result.state == RunState.DONE
    assert pane.versions[3] is old  # read again: the same object while it is held
    assert json.loads(store.encode_compact(session))["panes"] == json.loads(first)["panes"]
    assert pane.versions.packed() == 8  # `old` is held here: it stays a PaneVersion
    del old
    store.encode_compact(session)
    assert pane.versions.packed() == 9


def test_a_version_or_result_someone_holds_is_never_packed():
    session = regenerating(panes=1, runs=6)
    pane = session.panes[0]
    held_version, held_result = pane.versions[1], pane.versions[2].result
    store.encode_compact(session)
    assert pane.versions[1] is held_version and pane.versions[2].result is held_result
    assert versions.index_of(pane, held_result) == 2
    shown, text = weakref.ref(pane.result), pane.result.text
    versions.show(pane, 0)  # the shown one changes: the one shown before is packed at the next save
    store.encode_compact(session)
    assert shown() is None and pane.versions[5].result.text == text  # packed: read again, it is made anew


def test_a_packed_version_that_is_read_and_changed_is_saved_as_it_is_now():
    session = regenerating(panes=1, runs=4)
    store.encode_compact(session)
    session.panes[0].versions[0].result.format_note = "checked"
    saved = json.loads(store.encode_compact(session))
    assert saved["panes"][0]["versions"][0]["result"]["format_note"] == "checked"


def test_a_session_file_opens_with_its_versions_packed_and_reads_them_on_demand(tmp_path):
    session = regenerating(panes=2, runs=20)
    path = tmp_path / "colours.chorus.json"
    session.save(path)
    opened = Session.load(path)
    pane = opened.panes[1]
    assert len(pane.versions) == 10 and pane.versions.packed() == 9  # the shown one was read to show it
    assert pane.result is pane.versions[9].result and pane.result.text == "Reply 19: a colour, and why."
    assert [v.result.text for v in pane.versions] == [v.result.text for v in session.panes[1].versions]


def test_a_list_grown_by_a_run_is_known_as_the_same_list_grown():
    pane = PaneSpec()
    run(pane, "One.")
    before = pane.versions
    run(pane, "Two.")
    assert pane.versions.grown_from(before) and not before.grown_from(pane.versions)
    assert not VersionList(list(pane.versions)).grown_from(before)  # the same versions, another list
    assert pane.versions == list(pane.versions) and pane.versions != before


def test_an_autosave_passes_the_joined_versions_on_without_encoding_or_copying_them(tmp_path, monkeypatch):
    """A pane regenerating for an hour holds thousands of versions: the autosave encoded every one (~56 ms at
    16,000 on the GUI thread) and copied the text again; the packed ones now go to the writer as the one piece
    their list keeps."""
    from app.session import autosave, version_file
    from app.session.version_list import JOIN_AT

    session = regenerating(panes=1, runs=JOIN_AT + 10)
    store.encode_compact(session)
    kept = session.panes[0].versions
    encoded = []
    real = version_file.CODEC.encode
    monkeypatch.setattr(version_file.CODEC, "encode", lambda v: encoded.append(v) or real(v))
    pieces = store.encode_pieces(session)
    assert encoded == [] and any(piece is kept._blocks[0] for piece in pieces)  # the block itself: not a copy
    assert len(bytes(kept._blocks[0])) > JOIN_AT * 100
    whole = json.loads(b"".join(map(bytes, pieces)))
    assert [v["result"]["text"] for v in whole["panes"][0]["versions"]] == [v.result.text for v in kept]
    saver = autosave.Autosaver(tmp_path / "autosave.chorus.json")
    try:
        saver.save(session, None, True)
        assert saver.flush()
    finally:
        saver.close()
    restored = autosave.restore(tmp_path / "autosave.chorus.json").session
    assert [v.result.text for v in restored.panes[0].versions] == [v.result.text for v in kept]


def test_a_joined_version_that_is_read_and_changed_is_saved_as_it_is_now():
    from app.session.version_list import JOIN_AT

    session = regenerating(panes=1, runs=JOIN_AT + 10)
    store.encode_compact(session)
    pane = session.panes[0]
    unchanged = pane.versions[5]  # read, not changed: it stays in the run
    assert len(store.encode_pieces(session)) == len(store.encode_pieces(session))
    pane.versions[7].result.format_note = "checked"
    saved = json.loads(store.encode_compact(session))["panes"][0]["versions"]
    assert saved[7]["result"]["format_note"] == "checked" and saved[5]["result"]["text"] == unchanged.result.text
    assert [v["result"]["text"] for v in saved] == [v.result.text for v in pane.versions]


def test_the_list_a_compare_view_offers_reads_no_packed_version():
    """A diff view or the table asks for a pane's versions' descriptions whenever a run adds one: reading
    thousands of packed versions back into objects each time would cost more with every run."""
    from app.session.version_list import JOIN_AT

    session = regenerating(panes=1, runs=JOIN_AT + 10)
    pane = session.panes[0]
    expected = versions.choices(pane)  # before packing: read from the objects
    store.encode_compact(session)
    packed = pane.versions.packed()
    assert packed == JOIN_AT + 9
    assert versions.choices(pane) == expected and pane.versions.packed() == packed
    assert expected[-1][0].endswith(" · done") and len(expected) == versions.choice_count(pane)
    assert versions.previous_index(pane) == JOIN_AT + 8 and pane.versions.packed() == packed


def test_showing_a_version_equal_to_the_shown_one_rests_the_other_so_it_is_packed():
    """Two runs can give equal results (the same values); showing one in place of the other is still a change of
    the shown object: the views follow it, and the one no longer shown rests and is packed."""
    session = Session(panes=[PaneSpec(draft="q")])
    session.events.all.connect(lambda info: None)
    pane = session.panes[0]
    first, second = run(pane, "The same reply."), run(pane, "The same reply.")
    assert first == second and first is not second and pane.result is second
    shown = []
    pane.events.result.connect(shown.append)
    versions.show(pane, 0)
    assert pane.result is first and shown == [first]
    gone = weakref.ref(second)
    del first, second
    store.encode_compact(session)
    assert pane.versions.packed() == 1 and gone() is None  # the second: rested, packed, its object freed


def test_joined_versions_keep_less_memory_than_their_file_form():
    """An hour of regenerating makes ~16,000 versions: kept as their file form, their bytes alone grew the
    process ~1.9 KB a version (the soak's RSS). Joined versions are kept deflated."""
    import random
    import tracemalloc

    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    session = regenerating(panes=2, runs=20)
    store.encode_compact(session)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(RUNS * 2):
            run(session.panes[i % 2], " ".join(rng.choice(words) for _ in range(80)))
            if i % 10 == 9:
                store.encode_pieces(session)
        pieces = store.encode_pieces(session)
        file_size = sum(len(bytes(piece)) for piece in pieces)
        del pieces
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    per_file_version = file_size / (RUNS * 2 + 20)
    assert kept / (RUNS * 2) < 0.75 * per_file_version, (  # 0.5x measured
        f"{kept / (RUNS * 2):.0f} bytes kept a version, its file form {per_file_version:.0f} (1.1x before)")


def test_what_each_version_ran_with_is_read_without_unpacking_it(tmp_path):
    """The version bar reads every version's settings when a pane is built (an open builds them all): a packed
    version is read without its result and stays packed, joined or not, so the next autosave encodes nothing."""
    from app.engine import SamplingParams
    from app.session.version_list import JOIN_AT

    session = regenerating(panes=1, runs=JOIN_AT + 10)
    session.panes[0].sampling = SamplingParams(temperature=1.3)
    run(session.panes[0], "A last one, warmer.")
    path = tmp_path / "colours.chorus.json"
    session.save(path)
    for pane in (session.panes[0], Session.load(path).panes[0]):  # packed in memory; joined as a file opens
        packed = pane.versions.packed()
        assert packed >= JOIN_AT
        setups = list(pane.versions.setups())
        later = list(pane.versions.setups(len(setups) - 2))
        assert pane.versions.packed() == packed
        assert [(s.messages, s.settings, s.started_at) for s in setups] == \
            [(v.messages, v.settings, v.started_at) for v in pane.versions]
        assert setups[-1].settings["sampling"].temperature == 1.3 != setups[0].settings["sampling"].temperature
        assert not any(s.result.text for s in setups[:-1])  # the packed ones' results were not read
        assert [s.settings for s in later] == [s.settings for s in setups[-2:]]
