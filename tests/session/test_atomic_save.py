"""Killing a process in the middle of saving leaves the old session or the new one, never a broken file."""

import random
import signal
import subprocess
import sys
import textwrap

from app.session import PaneSpec, Session, store

CHILD = textwrap.dedent("""
    import sys
    from app.session import PaneSpec, Session, store
    path = sys.argv[1]
    sessions = [Session(panes=[PaneSpec(draft=f"version {v} " + "x" * 20000 * (v + 1))]) for v in range(2)]
    n = 0
    while True:
        print(n, flush=True)  # the parent picks the save it kills, by its number
        sessions[n % 2].save(path)
        n += 1
""")


def expected(version: int) -> str:
    return f"version {version} " + "x" * 20000 * (version + 1)


def test_sigkill_during_saves_never_leaves_a_broken_file(tmp_path):
    seed = random.randrange(2**32)
    print(f"kill seed: {seed}")
    rng = random.Random(seed)
    path = tmp_path / "s.chorus.json"
    Session(panes=[PaneSpec(draft=expected(0))]).save(path)
    seen = set()
    for _ in range(25):
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True)
        target = rng.randint(0, 40)
        for line in child.stdout:  # an event per save: the kill lands at a different point of a save each time
            if int(line) >= target:
                break
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        draft = Session.load(path).panes[0].draft  # always loads
        assert draft in (expected(0), expected(1))
        seen.add(draft[:9])
    assert seen == {"version 0", "version 1"}  # both outcomes occurred: the kills did land mid-sequence
    store.remove_stale_temps(path)  # what the next launch does with the temporary files of killed saves
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
