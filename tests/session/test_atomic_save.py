"""Killing a process in the middle of saving leaves the old session or the new one, never a broken file; two
running instances keep their autosaves apart, and every one comes back."""

import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.session import PaneSpec, Session, autosave, store


def save_in_turn(path: str, numbers) -> None:
    """The killed child: saves two sessions in turn, forever, sending each save's number before it starts."""
    sessions = [Session(panes=[PaneSpec(draft=expected(v))]) for v in range(2)]
    n = 0
    while True:
        numbers.send(n)  # the parent picks the save it kills, by its number
        sessions[n % 2].save(path)
        n += 1


def expected(version: int) -> str:
    return f"version {version} " + "x" * 20000 * (version + 1)


def test_sigkill_during_saves_never_leaves_a_broken_file(tmp_path):
    seed = random.randrange(2**32)
    print(f"kill seed: {seed}")
    rng = random.Random(seed)
    path = tmp_path / "s.chorus.json"
    Session(panes=[PaneSpec(draft=expected(0))]).save(path)
    seen = set()
    # Each child is forked from a server process that imported app.session once (a fresh interpreter per child
    # spends ~1 s importing it): still a process of its own, killed with SIGKILL.
    processes = multiprocessing.get_context("forkserver")
    processes.set_forkserver_preload(["app.session", __name__])
    for _ in range(25):
        numbers, child_end = processes.Pipe(duplex=False)
        child = processes.Process(target=save_in_turn, args=(str(path), child_end), daemon=True)
        child.start()
        child_end.close()
        target = rng.randint(0, 40)
        while numbers.recv() < target:  # an event per save: the kill lands at a different point of a save each time
            pass
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        numbers.close()
        draft = Session.load(path).panes[0].draft  # always loads
        assert draft in (expected(0), expected(1))
        seen.add(draft[:9])
    assert seen == {"version 0", "version 1"}  # both outcomes occurred: the kills did land mid-sequence
    store.remove_stale_temps(path)  # what the next launch does with the temporary files of killed saves
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


HOLDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from app.session import PaneSpec, Session, autosave
    saver = autosave.claim(Path(sys.argv[1]))  # a running instance: it owns its slot until it dies
    saver.restore()
    saver.save(Session(panes=[PaneSpec(title="First window")]), None, True)
    saver.flush()
    (saver.path.parent / f".{saver.path.name}.inflight.tmp").write_text("half")  # as if mid-save
    print(saver.path, flush=True)
    sys.stdin.read()
""")


def test_two_instances_autosave_to_their_own_files_and_both_sessions_come_back(tmp_path):
    folder = tmp_path / "data"
    first = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        first_path = Path(first.stdout.readline().strip())
        inflight = first_path.with_name(f".{first_path.name}.inflight.tmp")
        second = autosave.claim(folder)  # a second window starts while the first runs
        assert second.path != first_path
        assert second.restore() == autosave.Restored()  # it does not take the first one's session...
        assert inflight.exists()  # ...nor delete the temporary file of the first one's save in progress
        second.save(Session(panes=[PaneSpec(title="Second window")]), None, True)
        assert second.flush()
        assert autosave.orphans(folder, own=second.path) == []  # the first one is alive: not offered
        assert Session.load(first_path).panes[0].title == "First window"  # neither overwrote the other
    finally:
        first.kill()  # the first window crashes
        first.wait()
        first.stdout.close()
        first.stdin.close()
    second.close()  # the second quits normally

    one = autosave.claim(folder)  # the next start takes a session over, and offers the other
    assert autosave.orphans(folder, own=one.path) == [second.path if one.path == first_path else first_path]
    two = autosave.claim(folder)  # the start after that takes the other
    titles = {saver.restore().session.panes[0].title for saver in (one, two)}
    assert titles == {"First window", "Second window"}
    assert not inflight.exists()  # cleared by the instance that owns that slot now
    assert autosave.orphans(folder) == []
    for saver in (one, two):
        saver.close()


def test_a_slot_another_process_holds_is_refused_and_a_bad_autosave_is_moved_aside(tmp_path):
    folder = tmp_path / "data"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        held = Path(holder.stdout.readline().strip())
        with pytest.raises(autosave.AutosaveBusy, match="another running Chorus"):
            autosave.Autosaver(held)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
        holder.stdin.close()
    held.write_text("{not json", encoding="utf-8")  # the dead instance's autosave is damaged
    saver = autosave.Autosaver(held)  # free now: its owner is gone
    restored = saver.restore()
    assert restored.session is None and "could not be restored" in restored.message
    kept = [p.name for p in folder.iterdir() if ".unreadable-" in p.name]
    assert len(kept) == 1 and (folder / kept[0]).read_text(encoding="utf-8") == "{not json"  # never deleted
    saver.close()
