"""Autosaves are spaced by their size: each rewrites the whole file, so a large session is saved less often
(`Autosaver.rest_s`, WRITE_RATE bytes a second on average), a small one as often as ever."""

from app.bench.versions import session_with_versions
from app.session import PaneSpec, Session, autosave


def test_the_rest_after_a_save_is_its_bytes_at_the_write_rate(tmp_path, monkeypatch):
    monkeypatch.setattr(autosave, "WRITE_RATE", 10)  # bytes a second: rests of minutes, whatever the machine
    saver = autosave.Autosaver(tmp_path / "autosave.chorus.json")
    try:
        assert saver.rest_s() == 0.0  # nothing written yet: save whenever
        session = session_with_versions(120, panes=2, tokens=40)
        for _ in range(2):  # the second save writes the versions as the deflated blocks the first joined
            saver.save(session, None, True)
            assert saver.flush(60)
            size = saver.path.stat().st_size  # what the save counted is the file it wrote
            assert size / 10 - 60 < saver.rest_s() <= size / 10
        small = Session(panes=[PaneSpec(draft="hi")])
        saver.save(small, None, True)
        assert saver.flush(60)
        assert saver.rest_s() <= saver.path.stat().st_size / 10 < size / 10 / 50  # the last save's size counts
    finally:
        saver.close()
