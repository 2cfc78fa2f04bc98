"""`run --spec-draft FILE` and a line's `"speculative": {"kind": "draft", ...}` on the real model: the lines that
draft with a draft model give the tokens of the plain line and report their drafts; one naming a file that is not a
model ends with a message naming it while the others complete; a session pane of kind draft model uses the file."""

import json

from app.cli.inputs import parse_line
from app.engine import SamplingParams
from app.session import PaneSpec, Session
from tests.cli.test_run import chorus, write_jsonl

TEXT = "Repeat exactly: the quick brown fox jumps over the lazy dog, then the quick brown fox sleeps."


def line(item_id: str, speculative=None, max_tokens: int = 30) -> str:
    data = {"id": item_id, "messages": [{"role": "user", "content": TEXT}], "sampling": {"temperature": 0},
            "max_tokens": max_tokens}
    return json.dumps(data | ({"speculative": speculative} if speculative else {}))


def test_a_lines_draft_model_is_read_and_checked():
    spec = parse_line('{"prompt": "x", "speculative": {"mode": "on", "kind": "draft", "draft_model": "/m/d.gguf"}}',
                      1).request.speculative
    assert (spec.kind, spec.draft_model) == ("draft", "/m/d.gguf")
    assert parse_line('{"prompt": "x", "speculative": {"kind": "draft"}}', 1).request.speculative.draft_model is None
    error = parse_line('{"prompt": "x", "speculative": {"kind": "ngram", "draft_model": "d.gguf"}}', 4).error
    assert error.startswith("line 4: ") and "draft_model" in error
    assert "kind must be one of ngram, draft" in parse_line('{"prompt": "x", "speculative": {"kind": "x"}}', 2).error


def test_run_with_a_draft_model(tmp_path, model_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + bytes(64))
    # other max_tokens: identical requests would coalesce (one decodes for all, speculation aside)
    lines = [line("plain"), line("engine-draft", {"mode": "on", "kind": "draft"}, 31),
             line("own-draft", {"mode": "on", "kind": "draft", "draft_model": str(model_path)}, 32),
             line("junk-draft", {"mode": "on", "kind": "draft", "draft_model": str(junk)}, 33)]
    out = tmp_path / "out.jsonl"
    run = chorus(write_jsonl(tmp_path / "in.jsonl", lines), "--out", out, "--spec-draft", model_path, "--slots", 2)
    assert run.returncode == 0, run.stderr  # a failed line is a result, not a failed run
    records = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    for name in ("engine-draft", "own-draft"):
        assert records[name]["text"].startswith(records["plain"]["text"]) and records[name]["error"] is None
        assert 0 < records[name]["accepted_tokens"] <= records[name]["drafted_tokens"]
    assert records["junk-draft"]["finish_reason"] == "error" and "junk.gguf" in records["junk-draft"]["error"]


def test_a_session_pane_drafts_with_its_draft_model(tmp_path, model_path):
    session = Session(panes=[PaneSpec(title="drafted", draft=TEXT, max_tokens=20, speculative="on",
                                      sampling=SamplingParams(temperature=0.0), speculative_kind="draft",
                                      draft_model=str(model_path))])
    path = tmp_path / "s.chorus.json"
    session.save(path)
    assert Session.load(path).panes[0].draft_model == str(model_path)  # saved in the session file
    out = tmp_path / "out.jsonl"
    run = chorus(path, "--out", out, "--slots", 1)
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["accepted_tokens"] > 0


def test_spec_draft_is_refused_with_a_server(tmp_path, model_path):
    run = chorus(write_jsonl(tmp_path / "in.jsonl", [line("a")]), "--server", "http://127.0.0.1:9/v1",
                 "--spec-draft", model_path)
    assert run.returncode == 2 and "--spec-draft drafts on the local engine" in run.stderr
