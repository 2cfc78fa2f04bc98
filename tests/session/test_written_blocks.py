"""The autosave copies the blocks of versions its last file holds instead of inflating them again
(app/session/written_blocks.py): an hour's ~33 MB of versions, autosaved every second or two, was inflated on
the writer's thread beside the engine each time."""

from __future__ import annotations

import json

from app.session import Session, autosave, store
from app.session.version_list import JOIN_AT, Deflated
from tests.session.test_version_list import regenerating


def saved(saver: autosave.Autosaver, session: Session) -> None:
    saver.save(session, None, True)
    assert saver.flush()


def test_the_next_autosave_reads_the_blocks_back_from_the_last_file_and_writes_the_same_text(tmp_path, monkeypatch):
    session = regenerating(panes=2, runs=JOIN_AT * 4 + 6)
    store.encode_compact(session)
    inflated = []
    real = Deflated.__bytes__
    monkeypatch.setattr(Deflated, "__bytes__", lambda block: inflated.append(block) or real(block))
    path = tmp_path / "autosave.chorus.json"
    saver = autosave.Autosaver(path)
    try:
        saved(saver, session)
        blocks = [b for p in session.panes for b in p.versions._blocks]
        assert len(blocks) == 4 and len(inflated) == 4  # the first write inflates each block once
        first = path.read_bytes()
        inflated.clear()
        saved(saver, session)
        assert inflated == [] and path.read_bytes() == first  # read back from the last file, not inflated
        regenerating(runs=JOIN_AT * 2, session=session)  # more versions: new blocks join
        store.encode_pieces(session)
        inflated.clear()
        saved(saver, session)
        new = [b for p in session.panes for b in p.versions._blocks if b not in blocks]
        assert len(new) == 2 and inflated == new  # only the blocks the last file lacks
        assert json.loads(path.read_bytes())["panes"] == json.loads(store.encode_compact(session))["panes"]
    finally:
        saver.close()


def test_a_last_file_cut_short_by_someone_else_is_not_trusted(tmp_path):
    session = regenerating(panes=1, runs=JOIN_AT * 2 + 3)
    path = tmp_path / "autosave.chorus.json"
    saver = autosave.Autosaver(path)
    try:
        saved(saver, session)
        with open(path, "r+b") as f:  # the file we keep open for reading, cut: its blocks can no longer be read
            f.truncate(10)
        saved(saver, session)
        assert json.loads(path.read_bytes())["panes"] == json.loads(store.encode_compact(session))["panes"]
    finally:
        saver.close()
