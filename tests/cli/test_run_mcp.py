"""`python -m app run IN.jsonl --mcp MCP.json --allow-mcp` and `python -m app mcp list` on real MCP servers
(tests/fixtures/mcp_servers.py) and the embedded model: nothing starts without consent (exit 2 naming the command
lines), eight lines calling the same counting tool make one real call (the others replayed) or eight with
--mcp-live, and a denied call is an error result the model sees."""

import json
import subprocess
import sys

from tests.cli.test_run import ROOT, chorus, write_jsonl
from tests.fixtures import mcp_servers as fx

LINE = {"messages": [{"role": "user", "content": "What is the weather in Paris?"}], "mcp": ["counter/lookup"],
        "tool_choice": "required", "max_tool_rounds": 1, "sampling": {"temperature": 0}, "max_tokens": 48}


def mcp_file(tmp_path, count):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"counter": fx.command("counting", count)}}), encoding="utf-8")
    return path


def eight_lines(tmp_path):
    return write_jsonl(tmp_path / "in.jsonl", [json.dumps({**LINE, "id": f"p{i}"}) for i in range(8)])


def results(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_without_consent_nothing_starts_and_the_command_lines_are_named(tmp_path):
    count = tmp_path / "count.txt"
    run = chorus(eight_lines(tmp_path), "--mcp", mcp_file(tmp_path, count))
    assert run.returncode == 2
    assert "counter: " in run.stderr and "mcp_servers.py counting" in run.stderr and "--allow-mcp" in run.stderr
    listing = subprocess.run([sys.executable, "-m", "app", "mcp", "list", mcp_file(tmp_path, count)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert listing.returncode == 2 and "--allow-mcp" in listing.stderr
    assert not count.exists()


def test_mcp_list_prints_each_servers_tools(tmp_path):
    listing = subprocess.run([sys.executable, "-m", "app", "mcp", "list", mcp_file(tmp_path, tmp_path / "c"),
                              "--allow-mcp"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    tools = json.loads(listing.stdout)["servers"]["counter"]["tools"]
    assert [t["name"] for t in tools] == ["lookup", "peek"]
    assert tools[0]["inputSchema"]["required"] == ["city"] and tools[0]["description"] == "The weather in a city"


def test_eight_lines_one_real_call_replayed_to_seven_then_eight_live(tmp_path):
    count = tmp_path / "count.txt"
    config, source = mcp_file(tmp_path, count), eight_lines(tmp_path)
    for flags, real_calls in (((), 1), (("--mcp-live",), 8)):
        count.unlink(missing_ok=True)
        out = tmp_path / "out.jsonl"
        run = chorus(source, "--mcp", config, "--allow-mcp", "--out", out, "--slots", 8, *flags)
        assert run.returncode == 0, run.stderr
        lines = results(out)
        assert len(lines) == 8
        answers = [r for line in lines for r in line["tool_results"]]
        assert len(answers) == 8, lines  # one tool turn per line
        assert all(a["server"] == "counter" and a["tool"] == "lookup" and not a["is_error"]
                   and a["content"].startswith("Sunny in") for a in answers), answers
        assert [a["replayed"] for a in answers].count(False) == real_calls
        assert all(line["tool_calls"][0]["name"] == "lookup" for line in lines)
        assert len(count.read_text().splitlines()) == real_calls


def test_a_call_the_policy_does_not_approve_is_an_error_the_model_sees(tmp_path):
    count = tmp_path / "count.txt"
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps({**LINE, "id": "only", "max_tokens": 48})])
    out = tmp_path / "out.jsonl"
    run = chorus(source, "--mcp", mcp_file(tmp_path, count), "--allow-mcp", "--mcp-approve", "read-only",
                 "--out", out, "--slots", 1)
    assert run.returncode == 0, run.stderr
    (line,) = results(out)
    (answer,) = line["tool_results"]
    assert answer["is_error"] and "was not run" in answer["content"] and "nobody can approve" in answer["content"]
    assert not count.exists()
