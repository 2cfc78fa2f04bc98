"""`python -m app run` as a user runs it: a subprocess on the real model, its files, exit codes and signals."""

import json
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from app.cli.inputs import parse_line
from app.engine import SamplingParams
from app.session import PaneSpec, Session

ROOT = Path(__file__).resolve().parents[2]
BAD = {4: "{not json", 9: json.dumps({"id": "odd", "prompt": "x", "colour": "red"}),
       15: json.dumps({"id": "hot", "prompt": "x", "sampling": {"temperature": -1}})}


def chorus(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "app", "run", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, **kwargs)


def request_line(i: int, max_tokens: int = 12) -> str:
    return json.dumps({"id": f"q{i}", "messages": [{"role": "user", "content": f"Name a number bigger than {i}."}],
                       "sampling": {"temperature": 0}, "max_tokens": max_tokens})


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_twenty_lines_three_bad_all_reported_with_line_numbers_and_a_report(tmp_path):
    lines = [BAD.get(n, request_line(n)) for n in range(1, 21)]
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    run = chorus(source, "--out", tmp_path / "out.jsonl", "--report", tmp_path / "report.md", "--slots", 4)
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(results) == 20
    errors = {r["line"]: r for r in results if r["finish_reason"] == "error"}
    assert set(errors) == set(BAD)
    assert "line 4: not valid JSON" in errors[4]["error"]
    assert "unknown field(s) colour" in errors[9]["error"] and errors[9]["id"] == "odd"
    assert "temperature" in errors[15]["error"] and errors[15]["id"] == "hot"
    for n in BAD:
        assert f"line {n}:" in run.stderr  # also on stderr, for whoever watches the run
    good = [r for r in results if r["line"] not in BAD]
    assert len(good) == 17 and all(r["finish_reason"] in ("stop", "length") and r["text"] for r in good)
    assert all(set(r) >= {"id", "text", "prompt_tokens", "cached_tokens", "generated_tokens", "queue_wait_s",
                          "ttft_s", "decode_tps"} for r in good)
    report = (tmp_path / "report.md").read_text()
    assert all(r["text"] in report for r in good) and "| q1 |" in report and "20 requests (3 ended in error)" in report


def test_results_stream_as_they_finish(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [request_line(i, max_tokens=48) for i in range(16)])
    with subprocess.Popen([sys.executable, "-m", "app", "run", str(source), "--slots", "2"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        first = json.loads(proc.stdout.readline())
        still_running = proc.poll() is None  # 14 requests were still queued or decoding when it arrived
        rest = proc.stdout.read().splitlines()
        assert proc.wait(timeout=300) == 0
    assert still_running and first["finish_reason"] in ("stop", "length")
    assert len(rest) == 15


def test_ctrl_c_writes_the_cancelled_runs_and_exits_130(tmp_path):
    lines = [request_line(0, max_tokens=1)] + [request_line(i, max_tokens=2000) for i in range(1, 9)]
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    with subprocess.Popen([sys.executable, "-m", "app", "run", str(source), "--slots", "2"], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        first = json.loads(proc.stdout.readline())  # the short one is done: the long ones are running
        proc.send_signal(signal.SIGINT)
        rest = [json.loads(line) for line in proc.stdout.read().splitlines()]
        code = proc.wait(timeout=120)
        stderr = proc.stderr.read()
    assert first["id"] == "q0" and code == 130, stderr
    assert rest and all(r["finish_reason"] == "cancelled" for r in rest)
    assert "Traceback" not in stderr


def test_a_session_file_runs_every_pane(tmp_path):
    panes = [PaneSpec(title=f"T {t}", draft="Name a colour.", sampling=SamplingParams(temperature=t, seed=1),
                      max_tokens=12) for t in (0.0, 0.9)]
    Session(panes).save(tmp_path / "s.chorus.json")
    run = chorus(tmp_path / "s.chorus.json", "--report", tmp_path / "r.md")
    assert run.returncode == 0, run.stderr
    results = [json.loads(line) for line in run.stdout.splitlines()]
    assert sorted(r["id"] for r in results) == ["T 0.0", "T 0.9"]
    report = (tmp_path / "r.md").read_text()
    assert "T 0.9" in report and "The session after the run" in report
    assert all(r["text"] in report for r in results)


def test_unusable_input_or_model_exits_2_with_one_sentence(tmp_path):
    missing = chorus(tmp_path / "nope.jsonl")
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    garbage = tmp_path / "g.json"
    garbage.write_text("{\n  \"hello\": ")
    broken = chorus(garbage)
    assert broken.returncode == 2 and "Traceback" not in broken.stderr and broken.stderr.count("\n") == 1
    source = write_jsonl(tmp_path / "in.jsonl", [request_line(1)])
    bad_model = chorus(source, "--model", tmp_path / "nope.gguf")
    assert bad_model.returncode == 2 and "nope.gguf" in bad_model.stderr and "Traceback" not in bad_model.stderr


def test_parse_line_names_the_problem():
    assert parse_line('{"prompt": "hi", "max_tokens": 3}', 2).request.max_tokens == 3
    assert "give either messages or prompt" in parse_line('{"id": "a"}', 5).error
    assert parse_line('[1, 2]', 7).error == "line 7: expected a JSON object"
    assert "max_tokens" in parse_line('{"prompt": "x", "max_tokens": 0}', 1).error


def stalling_server():
    """A real OpenAI-style server on 127.0.0.1 that lists one model, then streams one token of every chat reply
    and goes silent (a server that hangs mid-reply). Returns (its URL, an Event set once a reply streams, the
    listening socket)."""

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    streaming = threading.Event()
    models = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}).encode()
    chunk = json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                        "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]})

    held = []  # every connection, so that none closes when the next one (the metrics poll) is accepted

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            request = conn.recv(65536)
            if request.startswith(b"GET"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(models)).encode() + b"\r\n\r\n" + models)
                conn.close()
            else:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                             + f"data: {chunk}\n\n".encode())
                streaming.set()  # and never another byte: the connection stays open, silent

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1", streaming, listener


def test_ctrl_c_against_a_stalled_server_writes_the_cancelled_run_and_exits_130(tmp_path):
    """Before the fix the drain waited on the silent stream and then raised queue.Empty (a traceback, exit 1)."""
    url, streaming, listener = stalling_server()
    source = write_jsonl(tmp_path / "in.jsonl", [request_line(1, max_tokens=50)])
    with subprocess.Popen([sys.executable, "-m", "app", "run", str(source), "--server", url], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert streaming.wait(120), "the run never reached the server"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=50)  # well inside the 60 s read timeout a stalled stream would otherwise wait
        lines = [json.loads(line) for line in proc.stdout.read().splitlines()]
        stderr = proc.stderr.read()
    listener.close()
    assert code == 130 and "Traceback" not in stderr, stderr
    assert [r["finish_reason"] for r in lines] == ["cancelled"]  # written, with whatever text had arrived


def test_speculative_field_is_read_named_when_bad_and_reported(tmp_path):
    assert parse_line('{"prompt": "x", "speculative": "on"}', 1).request.speculative.mode == "on"
    assert parse_line('{"prompt": "x", "speculative": "off"}', 1).request.speculative is None
    assert parse_line('{"prompt": "x", "speculative": {"max_draft": 4}}', 1).request.speculative.max_draft == 4
    assert "max_draft must be in [1, 64]" in parse_line('{"prompt": "x", "speculative": {"max_draft": 99}}', 3).error
    assert parse_line('{"prompt": "x", "speculative": {"colour": 1}}', 3).error.startswith("line 3: speculative must")
    assert "mode must be one of off, auto, on" in parse_line('{"prompt": "x", "speculative": "fast"}', 2).error
    text = "Repeat exactly: the quick brown fox jumps over the lazy dog, then the quick brown fox sleeps."
    line = json.dumps({"id": "copy", "messages": [{"role": "user", "content": text}], "speculative": "on",
                       "sampling": {"temperature": 0}, "max_tokens": 40})
    out = tmp_path / "out.jsonl"
    assert chorus(write_jsonl(tmp_path / "in.jsonl", [line]), "--out", out).returncode == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert 0 < record["accepted_tokens"] <= record["drafted_tokens"]


def test_the_report_clusters_requests_that_differ_only_by_seed(tmp_path):
    lines = [json.dumps({"id": f"s{seed}", "messages": [{"role": "user", "content": "Name one colour."}],
                         "sampling": {"temperature": 1.0, "seed": seed}, "max_tokens": 6}) for seed in (1, 2, 3)]
    lines.append(request_line(9))  # alone: in no group
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    run = chorus(source, "--out", tmp_path / "out.jsonl", "--report", tmp_path / "r.md", "--embedder", "local")
    assert run.returncode == 0, run.stderr
    report = (tmp_path / "r.md").read_text()
    assert "## Stability" in report and "s1 and 2 more · 3 seeds (1, 2, 3)" in report
    assert "largest cluster " in report and "/3 (" in report and "weak embedder" in report
    html = chorus(source, "--report", tmp_path / "r.html", "--embedder", str(tmp_path / "none.gguf"))
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "r.html").read_text()
    assert "<h2>Stability</h2>" in page and "not clustered" in page and "none.gguf" in page


def test_context_sets_what_each_slot_holds(tmp_path):
    line = json.dumps({"id": "long", "prompt": "apple " * 300, "max_tokens": 2})
    source = write_jsonl(tmp_path / "in.jsonl", [line])
    outcomes = {}
    for context in (256, 1024):
        out = tmp_path / f"out-{context}.jsonl"
        done = chorus(source, "--out", out, "--slots", 1, "--context", context)
        (record,) = [json.loads(text) for text in out.read_text(encoding="utf-8").splitlines()]
        outcomes[context] = (done.returncode, record["finish_reason"], record["error"] or "")
    assert outcomes[256][1] == "error" and "256" in outcomes[256][2], outcomes
    assert outcomes[1024][:2] == (0, "length"), outcomes
