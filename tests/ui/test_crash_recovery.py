"""The real app, killed with SIGKILL mid-stream, comes back with its panes, conversations and partial replies."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.engine import SamplingParams
from app.session import PaneSpec, Session
from app.session.autosave import AUTOSAVE_NAME, DATA_DIR_ENV

ROOT = Path(__file__).resolve().parents[2]


def app_env(tmp_path: Path) -> dict:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    env[DATA_DIR_ENV] = str(tmp_path / "data")
    return env


def wait_for_autosave(path: Path, proc: subprocess.Popen, predicate, timeout: float = 120) -> dict:
    """Poll the autosave the running app writes (the only channel a killed process leaves) until it shows
    what we wait for."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the app exited early ({proc.returncode}): {proc.stderr.read()}"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # not written yet (a reader never sees a half-written file: see below)
            data = None
        if data and predicate(data):
            return data
        time.sleep(0.05)
    raise AssertionError(f"the autosave never showed the expected state within {timeout} s")


def kill_when(path: Path, proc: subprocess.Popen, predicate, timeout: float = 120) -> dict:
    """`wait_for_autosave`, then SIGKILL the app however the wait ended; the autosave it showed."""
    try:
        return wait_for_autosave(path, proc, predicate, timeout)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_sigkill_mid_stream_then_restart_restores_everything(tmp_path):
    greedy = SamplingParams(temperature=0)
    session = Session(panes=[
        PaneSpec(title="Essay", draft="Write a 2000-word essay about the history of lighthouses.", sampling=greedy,
                 max_tokens=1500),
        PaneSpec(title="Chat", turns=[{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello."}],
                 draft="Tell me a long story about a lighthouse keeper.", sampling=greedy, max_tokens=1500),
        PaneSpec(title="Count", draft="Count from 1 to 400, one number per line.", sampling=greedy, max_tokens=1500),
        PaneSpec(title="Idle", system="Answer like a pirate."),  # nothing to send yet: Run all skips it
    ])
    start = tmp_path / "start.chorus.json"
    session.save(start)
    autosave = tmp_path / "data" / AUTOSAVE_NAME
    env = app_env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "app", str(start), "--run-all"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def streaming(data):
        return any(p["result"]["state"] == "generating" and len(p["result"]["text"]) > 20 for p in data["panes"])

    before = kill_when(autosave, proc, streaming)
    at_kill = {p["title"]: p for p in before["panes"]}

    again = subprocess.run([sys.executable, "-m", "app", "--print-restored"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    restored = json.loads(again.stdout.strip().splitlines()[-1])
    assert restored["message"] is None  # nothing was corrupt
    panes = {p["title"]: p for p in restored["panes"]}
    assert list(panes) == ["Essay", "Chat", "Count", "Idle"]
    interrupted = 0
    for title in ("Essay", "Chat", "Count"):
        was = at_kill[title]["result"]
        if was["state"] in ("queued", "prefilling", "generating"):  # it was running when the app died
            assert panes[title]["state"] == "interrupted"
            assert panes[title]["text"].startswith(was["text"])  # at least what the autosave had seen
            interrupted += 1
        else:
            assert panes[title]["state"] == was["state"] == "done"
    assert interrupted >= 1
    assert [t["content"] for t in panes["Chat"]["turns"][:3]] == [
        "Hi!", "Hello.", "Tell me a long story about a lighthouse keeper."]
    assert panes["Idle"]["system"] == "Answer like a pirate." and panes["Idle"]["state"] == "idle"
