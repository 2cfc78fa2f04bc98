"""The defect a new user hit: Run all with nothing typed regenerates each pane's last reply, and a SIGKILL mid-run
used to bring the panes back as an empty "Assistant (interrupted)", the replies they held gone. Now the reply a
run replaces stays the pane's until the new one ends: after the kill the old reply is back, and the cut-short
run is kept beside it as a version."""

import subprocess
import sys

from app.engine import SamplingParams
from app.session import PaneResult, PaneSpec, RunState, Session, autosave
from app.session.autosave import AUTOSAVE_NAME
from tests.ui.test_crash_recovery import ROOT, app_env, kill_when

GREEDY = SamplingParams(temperature=0)
HAIKU = "Rain on the tin roof\nthe kettle begins to sing\nno one is coming"
ANSWER = "Lighthouses began as fires on hills. " * 12


def answered(title: str, question: str, reply: str) -> PaneSpec:
    return PaneSpec(title=title, sampling=GREEDY, max_tokens=1500,
                    turns=[{"role": "user", "content": question}, {"role": "assistant", "content": reply}],
                    result=PaneResult(state=RunState.DONE, text=reply, finish_reason="stop", generated_tokens=40))


def test_run_all_with_nothing_typed_then_sigkill_keeps_the_replies_it_was_replacing(tmp_path):
    start = tmp_path / "start.chorus.json"
    Session(panes=[answered("Haiku", "Write a haiku about rain, then count from 1 to 300.", HAIKU),
                   answered("Answer", "Tell the history of lighthouses in 2000 words.", ANSWER)]).save(start)
    path = tmp_path / "data" / AUTOSAVE_NAME
    proc = subprocess.Popen([sys.executable, "-m", "app", str(start), "--run-all"], cwd=ROOT, env=app_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def regenerating(data) -> bool:  # every pane's new reply is streaming (the old ones were dropped here before)
        return all(p["result"]["state"] == "generating" and len(p["result"]["text"]) > 20 for p in data["panes"])

    at_kill = kill_when(path, proc, regenerating, timeout=240)

    restored = autosave.restore(path)
    assert restored.message is None
    panes = {p.title: p for p in restored.session.panes}
    for title, old in (("Haiku", HAIKU), ("Answer", ANSWER)):
        pane = panes[title]
        assert pane.turns[-1] == {"role": "assistant", "content": old}, pane.turns  # the reply it held is back
        assert pane.result.text == old and pane.result.state == RunState.DONE
        cut = next(p["result"]["text"] for p in at_kill["panes"] if p["title"] == title)
        assert [v.result.text for v in pane.versions][:1] == [old] and len(pane.versions) == 2
        assert pane.versions[1].result.state == RunState.INTERRUPTED
        assert pane.versions[1].result.text.startswith(cut) and len(cut) > 20  # the cut-short run is kept too
        assert pane.versions[1].messages[-1] == pane.turns[0]  # the prompt it was sent
        assert pane.current == 0
