"""`python -m app eval` with promptfoo's `config.mcp` on the embedded model and a real MCP server: nothing starts
without --allow-mcp (exit 2 naming the command line); with it, both variants' calls are answered (one real call
for the row, replayed to the other variant), tool-call-f1 and is-valid-openai-tools-call score the MCP calls, and
the answers are in results.json."""

import json
import sys

from tests.cli.test_eval_cli import chorus_eval, results, write_config
from tests.fixtures import mcp_servers as fx


def mcp_config(model_path, count) -> str:
    server = json.dumps({"command": sys.executable, "args": [fx.HERE, "counting", "--count", str(count)],
                         "name": "counter"})
    providers = "".join(f"  - id: file://{model_path}\n    label: {label}\n    config:\n"
                        "      temperature: 0\n      max_tokens: 48\n      tool_choice: required\n"
                        f"      mcp: {{enabled: true, timeout: 30000, server: {server}}}\n" for label in "ab")
    return ("prompts: ['What is the weather in Paris?']\n"
            "providers:\n" + providers +
            "tests:\n  - assert:\n      - type: tool-call-f1\n        value: [lookup, peek]\n        threshold: 0.6\n"
            "      - type: is-valid-openai-tools-call\n")


def test_config_mcp_needs_consent_then_answers_every_variant_from_one_call(model_path, tmp_path):
    count = tmp_path / "count.txt"
    config = write_config(tmp_path, mcp_config(model_path, count))
    refused = chorus_eval(config)
    assert refused.returncode == 2 and "counter: " in refused.stderr and "--allow-mcp" in refused.stderr
    assert not count.exists()
    out = tmp_path / "results.json"
    run = chorus_eval(config, "--allow-mcp", "-o", out)
    assert run.returncode in (0, 100), run.stderr
    rows = results(out)
    assert len(rows) == 2
    for row in rows:
        names = [c["name"] for c in row["response"]["toolCalls"]]
        assert names and set(names) <= {"lookup", "peek"}, row["response"]
        answers = row["response"]["toolResults"]
        assert answers and answers[0]["server"] == "counter" and not answers[0]["is_error"], answers
        assert row["gradingResult"]["componentResults"][1]["pass"], row["gradingResult"]  # the call validates
    first = [row["response"]["toolResults"][0]["replayed"] for row in rows]
    assert sorted(first) == [False, True]  # one real call for the row, replayed to the other variant
    lookups = [r for row in rows for r in row["response"]["toolResults"] if r["tool"] == "lookup"]
    real = len(count.read_text().splitlines()) if count.exists() else 0
    assert real == len([r for r in lookups if not r["replayed"]])  # the server ran each real lookup once
