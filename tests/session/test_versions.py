"""A pane's versions on the real model: every run keeps its reply with its settings and the prompt as sent,
they survive save and load, the pane can show any of them, and a branch from an old one replays it."""

import json

from app.engine import SamplingParams
from app.session import PaneResult, PaneSpec, RunState, Session, SessionRunner, versions
from tests.conftest import EngineSubmitter, drive

GREEDY = SamplingParams(temperature=0)


def run(runner, pane, draft: str | None = None):
    if draft is not None:
        pane.draft = draft
    runner.run(pane)
    drive(runner)
    return pane.result


def test_every_run_is_a_version_and_they_survive_save_and_load(make_engine, tmp_path):
    engine = make_engine(n_slots=1, n_ctx_per_slot=1024)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    pane = PaneSpec(draft="Name a colour.", sampling=GREEDY, max_tokens=12, show_probabilities=True)
    session = Session(panes=[pane])
    first = run(runner, pane)
    pane.sampling = SamplingParams(temperature=1.0, seed=7)
    second = run(runner, pane)  # nothing typed: a regenerate, with other settings
    assert [v.result for v in pane.versions] == [first, second] and pane.versions[1].result is pane.result
    assert pane.current == 1 and versions.label(pane) == "version 2 of 2"
    assert pane.versions[0].settings["sampling"] == GREEDY and pane.versions[1].settings["sampling"].seed == 7
    assert pane.versions[0].messages == pane.versions[1].messages == [{"role": "user", "content": "Name a colour."}]
    assert first.token_logprobs and first.ttft_s > 0  # logprobs and timings kept with the version

    session.save(tmp_path / "s.chorus.json")
    again = Session.load(tmp_path / "s.chorus.json").panes[0]
    assert [v.result.text for v in again.versions] == [first.text, second.text]
    assert again.result is again.versions[1].result and again.current == 1
    assert again.versions[0].settings["sampling"] == GREEDY
    assert [e.logprob for e in again.versions[0].result.token_logprobs] == [e.logprob for e in first.token_logprobs]
    versions.show(again, 0)  # back to version 1: its conversation and its result
    assert versions.label(again) == "version 1 of 2" and again.turns[-1]["content"] == first.text


def test_a_branch_from_an_old_version_replays_that_version(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=1024)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    pane = PaneSpec(system="Be brief.", draft="Say hello.", sampling=GREEDY, max_tokens=16)
    session = Session(panes=[pane])
    first = run(runner, pane)
    pane.system, pane.max_tokens = "Answer in French.", 20
    pane.editing, pane.draft = 0, "Say goodbye."
    run(runner, pane)  # the question was rewritten: version 2 answers another prompt with other settings
    assert len(pane.versions) == 2 and pane.versions[1].prompt == "Say goodbye."

    copy = session.adopt(versions.branch(pane, 0))
    assert copy.turns == [{"role": "user", "content": "Say hello."}, {"role": "assistant", "content": first.text}]
    assert (copy.system, copy.max_tokens, copy.versions) == ("Be brief.", 16, [])
    replay = run(runner, copy)  # nothing typed: regenerate version 1's reply, with its settings
    assert copy.versions[-1].messages == pane.versions[0].messages
    assert replay.text == first.text  # greedy, the same prompt and settings: the same reply


def test_a_session_file_without_versions_loads_and_its_reply_is_kept_on_the_next_run(make_engine, tmp_path):
    old = {"format": "chorus-session", "version": 2, "panes": [{
        "title": "Old", "turns": [{"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "Hi!"}],
        "sampling": {"temperature": 0}, "max_tokens": 8,
        "result": {"state": "done", "text": "Hi!", "finish_reason": "stop"}}]}
    (tmp_path / "old.chorus.json").write_text(json.dumps(old), encoding="utf-8")
    pane = Session.load(tmp_path / "old.chorus.json").panes[0]
    assert pane.versions == [] and pane.current is None and versions.label(pane) == ""
    engine = make_engine(n_slots=1, n_ctx_per_slot=512)
    runner = SessionRunner(EngineSubmitter(engine))
    engine.subscribe(runner.feed)
    run(runner, pane)
    assert [v.result.text for v in pane.versions][0] == "Hi!" and len(pane.versions) == 2
    assert pane.versions[0].messages == [{"role": "user", "content": "Say hi."}]


def test_a_crash_mid_regenerate_gives_back_the_reply_it_was_replacing(tmp_path):
    """The file as an autosave wrote it while a regenerate streamed (the SIGKILL test does it on the real app)."""
    done = PaneResult(state=RunState.DONE, text="Old reply.", finish_reason="stop")
    running = PaneResult(state=RunState.GENERATING, text="New rep")
    pane = PaneSpec(turns=[{"role": "user", "content": "Q"}], result=running, current=0, versions=[
        versions.PaneVersion(done, [{"role": "user", "content": "Q"}]),
        versions.PaneVersion(running, [{"role": "user", "content": "Q"}])])
    Session(panes=[pane]).save(tmp_path / "s.chorus.json")
    back = Session.load(tmp_path / "s.chorus.json").panes[0]
    assert back.turns[-1]["content"] == "Old reply." and back.result.text == "Old reply."
    assert back.versions[1].result.state == RunState.INTERRUPTED and back.versions[1].result.text == "New rep"
    assert versions.label(back) == "version 1 of 2"


def test_exports_list_every_version_and_the_flips_of_the_last_run():
    import json as json_

    from app.cli import report
    from app.evaluate import reports, results_json
    from app.session import export
    from tests.ui.test_versions_pane import three_versions, two_runs

    session = Session(panes=[three_versions()], evaluation=two_runs())
    markdown = export.to_markdown(session)
    assert "### Versions (version 3 of 3)" in markdown and "**Version 3** — shown" in markdown
    assert "> Red, like a rose." in markdown and "T 0.2" in markdown  # each version, what differs between them
    [line] = export.to_jsonl(session).splitlines()
    record = json_.loads(line)
    assert [v["text"] for v in record["versions"]] == ["Blue.", "Red, like a rose.", "Green."]
    assert record["shown_version"] == 3 and record["versions"][0]["messages"][0]["content"] == "Name a colour."

    cells = [json_.loads(line) for line in results_json.to_jsonl(session.evaluation).splitlines()]
    flipped = [c["flipped"] for c in cells if "flipped" in c]
    assert sorted(flipped) == ["fail → pass"] * 7 + ["pass → fail"] * 2 and all("previousRun" in c for c in cells)
    page = reports.to_html(session.evaluation)
    assert "Compared with the previous run" in page and "No detectable change" in page
    document = report.to_markdown([], session, 0.0)
    assert "## Evaluation runs compared: run 1 of 2" in document and "pass → fail" in document
    assert "### Versions (version 3 of 3)" in document
    assert "No detectable change" in report.to_html([], session, 0.0)


def test_an_opened_sessions_first_autosave_reencodes_none_of_its_versions(tmp_path, monkeypatch):
    """The encoding a version was read from is kept: the first autosave after opening a session with many versions
    does not encode them again on the GUI thread (bench --versions times it), and writes the same versions."""
    from app.bench.versions import session_with_versions
    from app.session import store, version_file

    original = session_with_versions(count=20, panes=2, tokens=12)
    path = tmp_path / "many.chorus.json"
    original.save(path)
    loaded = Session.load(path)
    encoded = []
    real = version_file.version_to_file
    monkeypatch.setattr(version_file, "version_to_file", lambda v: encoded.append(v) or real(v))
    first = json.loads(store.encode_compact(loaded))
    assert encoded == []
    assert [p["versions"] for p in first["panes"]] == [p["versions"] for p in json.loads(
        store.encode_compact(original))["panes"]]
    pane = loaded.panes[0]  # a kept version whose result moves is encoded anew
    pane.versions[0].result.text += " more"
    encoded.clear()
    store.encode_compact(loaded)
    assert encoded == [pane.versions[0]]


def test_the_shown_version_is_found_from_the_newest_without_reading_the_rest():
    """A pane regenerating for an hour holds thousands of versions, and its version bar asks which one it shows
    on every streamed change: the search read every version from the oldest before it reached the last."""
    import types

    class Unread:
        @property
        def result(self):
            raise AssertionError("an older version was read")

    shown = PaneResult(state=RunState.DONE, text="The last.")
    pane = types.SimpleNamespace(versions=[Unread() for _ in range(1000)] + [versions.PaneVersion(shown)],
                                 result=shown)
    assert versions.shown(pane) == 1000 and versions.label(pane) == "version 1001 of 1001"
