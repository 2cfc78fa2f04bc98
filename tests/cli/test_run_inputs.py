"""What `python -m app run` makes of its input lines, on the real model: a string `stop` is one stop string, a
wrong type is a per-line error naming the field, and Ctrl+C is never lost, even when it lands where Python
swallows exceptions (a weakref finalizer)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEA = [{"role": "user", "content": "Write two sentences about the sea."}]


def line(item_id: str, **fields) -> str:
    return json.dumps({"id": item_id, "messages": SEA, "sampling": {"temperature": 0}, "max_tokens": 16, **fields})


def test_a_string_stop_is_one_stop_string_not_its_characters(tmp_path):
    # "zebra" never comes in two sentences about the sea, but its letters e, a, r do: split into characters it
    # would cut the reply at the first of them
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([line("none"), line("string", stop="zebra"), line("list", stop=["zebra"]),
                                 line("number", stop=5), line("mixed", stop=["ok", 3])]) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "app", "run", str(source)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    records = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert done.returncode == 0, done.stderr
    plain = records["none"]
    assert plain["finish_reason"] == "length" and "e" in plain["text"] and "a" in plain["text"], plain
    for name in ("string", "list"):
        assert records[name]["text"] == plain["text"] and records[name]["finish_reason"] == "length", records[name]
    for name in ("number", "mixed"):
        assert records[name]["finish_reason"] == "error"
        assert "stop must be a string or a list of strings" in records[name]["error"], records[name]
    assert "Traceback" not in done.stderr


CTRL_C_IN_A_FINALIZER = """
import os, signal, sys, weakref
from app.__main__ import main
from app.cli import run as run_cli

class Doomed:
    pass

write = run_cli.Run._write

def _write(self, item, result):
    write(self, item, result)
    if item.id == "q0":  # the short request is written: Ctrl+C now, from inside a finalizer
        doomed = Doomed()
        weakref.finalize(doomed, os.kill, os.getpid(), signal.SIGINT)
        del doomed

run_cli.Run._write = _write
sys.exit(main(["run", *sys.argv[1:]]))
"""


def test_ctrl_c_landing_inside_a_finalizer_still_cancels_and_exits_130(tmp_path):
    # os.kill runs Python's signal handler before it returns, so the SIGINT is handled inside the finalizer:
    # a handler that raised KeyboardInterrupt there was swallowed ("Exception ignored in: <finalize object>")
    # and the run went on to exit 0; the counting handler is seen by the run loop whatever it interrupted
    lines = [json.dumps({"id": "q0", "prompt": "One", "max_tokens": 1})]
    lines += [json.dumps({"id": f"q{i}", "messages": SEA, "max_tokens": 400, "sampling": {"temperature": 0}})
              for i in range(1, 5)]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_FINALIZER, str(source), "--slots", "2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    records = [json.loads(text) for text in done.stdout.splitlines()]
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert records[0]["id"] == "q0" and len(records) >= 2  # the rest were still running (or never submitted)
    assert all(r["finish_reason"] == "cancelled" for r in records[1:]), records
    assert "KeyboardInterrupt" not in done.stderr and "Traceback" not in done.stderr


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}


def test_tools_lines_are_checked_shown_to_the_model_and_results_carry_tool_calls(tmp_path):
    from app.cli.inputs import parse_line
    from app.cli.run import result_record
    from app.session import PaneResult

    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([line("tools", tools=[WEATHER], tool_choice="get_weather", max_tokens=60),
                                 line("twice", tools=[WEATHER, WEATHER]),
                                 line("choice", tool_choice="required"),
                                 line("schema", tools=[{"type": "function", "function": {
                                     "name": "f", "parameters": {"type": 5}}}])]) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "app", "run", str(source)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    records = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert records["tools"]["error"] is None and "calls are shown as text" not in (records["tools"].get("note") or "")
    assert [c["name"] for c in records["tools"]["tool_calls"]] == ["get_weather"]  # the generic JSON format
    assert "tool 2 (get_weather): the name 'get_weather' is also tool 1's" in records["twice"]["error"]
    assert "'required' needs tools, and the line has none" in records["choice"]["error"]
    assert "tool 1 (f): function.parameters is not a valid JSON Schema" in records["schema"]["error"]
    item = parse_line(line("x", tools=[WEATHER], tool_choice="required", parallel_tool_calls=False), 1)
    assert item.request.tools == (WEATHER,) and item.request.parallel_tool_calls is False
    calls = [{"id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert result_record(item, PaneResult(tool_calls=calls, finish_reason="tool_calls"))["tool_calls"] == calls


def test_tool_call_first_is_taken_from_a_line_and_a_bad_type_names_its_line():
    from app.cli.inputs import parse_line

    item = parse_line(line("x", tools=[WEATHER], tool_choice="required", tool_call_first=True), 1)
    assert item.error is None and item.request.tool_call_first is True and item.request.tool_choice == "required"
    assert parse_line(line("y", tools=[WEATHER], tool_choice="required"), 2).request.tool_call_first is False
    bad = parse_line(line("z", tools=[WEATHER], tool_choice="required", tool_call_first="yes"), 3)
    assert bad.request is None and bad.id == "z"
    assert bad.error == 'line 3: tool_call_first must be true or false, got "yes"'
