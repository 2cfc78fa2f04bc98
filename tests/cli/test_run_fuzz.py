"""`run` JSONL lines under fuzzing: every field of a plausible request line set to every wrong type, lone
surrogates included. Each line either becomes a request the engine accepts, or an error naming its line and the
field — never an exception (parse_line in-process: no model). The examples are counted and the count checked.

A handful of such lines also go through the real `python -m app run` on the model (test_run_inputs.py covers
stop; here a line with a lone surrogate beside good ones).
"""

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli.inputs import parse_line
from tests.evaluate.test_config_fuzz import WRONG_VALUES, damaged

ROOT = Path(__file__).resolve().parents[2]
LINE = {"id": "q1", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "sampling": {"temperature": 0.7, "top_k": 40, "top_p": 0.9, "min_p": 0.05, "repeat_penalty": 1.1,
                     "frequency_penalty": 0.1, "presence_penalty": 0.1, "penalty_last_n": 64, "seed": 7},
        "max_tokens": 16, "stop": ["\n\n", "END"], "logprobs": 2, "json_schema": {"type": "object"}}
RAW = {"id": "q2", "prompt": "Once upon", "max_tokens": 8, "stop": "END", "grammar": 'root ::= "a"'}
COUNTS: dict[str, int] = {}


def names_a_field(error: str, path) -> bool:
    """The error names the damaged field: its top-level name, and the sampling setting inside `sampling`."""
    if path[0] == "sampling" and len(path) > 1:
        return str(path[1]) in error
    return str(path[0]) in error


@settings(max_examples=500, deadline=None)
@given(st.one_of(damaged(LINE), damaged(RAW)))
def _one_line(case):
    data, path = case
    item = parse_line(json.dumps(data), 7)
    if item.request is None:
        assert item.error.startswith("line 7: ") and names_a_field(item.error, path), (path, item.error)
        item.error.encode("utf-8")  # printable and writable as it is
        COUNTS["refused"] = COUNTS.get("refused", 0) + 1
    else:
        assert item.settings is not None and item.id and item.request.max_tokens >= 1
        item.id.encode("utf-8")
        COUNTS["ran"] = COUNTS.get("ran", 0) + 1


@settings(max_examples=200, deadline=None)
@given(st.one_of(WRONG_VALUES.map(json.dumps), st.sampled_from(["{", "[" * 100000, "", "null", "\ufeff{}"])))
def _not_an_object(text):
    item = parse_line(text, 3)
    assert item.request is None and item.error.startswith("line 3: ")
    COUNTS["not an object"] = COUNTS.get("not an object", 0) + 1


def test_every_field_of_a_run_line_set_to_every_wrong_type():
    _one_line()
    _not_an_object()
    ran, refused, other = COUNTS.get("ran", 0), COUNTS.get("refused", 0), COUNTS.get("not an object", 0)
    print(f"run JSONL fuzz: {ran + refused + other} lines, {ran} ran, {refused} refused naming the field, "
          f"{other} not a request object")
    assert ran + refused >= 400 and ran and refused and other >= 20


def test_a_line_with_a_lone_surrogate_is_an_error_line_and_the_rest_run(tmp_path):
    lines = [json.dumps({"id": "ok", "prompt": "One, two,", "max_tokens": 3}),
             json.dumps({"id": "bad\udcff", "prompt": "Say \udcff", "max_tokens": 3}),
             json.dumps({"id": "also ok", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3})]
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "app", "run", str(source), "--out", str(tmp_path / "out.jsonl"),
                           "--report", str(tmp_path / "report.md")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    records = {r["line"]: r for r in map(json.loads, (tmp_path / "out.jsonl").read_text("utf-8").splitlines())}
    assert records[1]["finish_reason"] == records[3]["finish_reason"] == "length"
    assert records[2]["finish_reason"] == "error" and records[2]["id"] == "bad\\udcff"
    assert "prompt holds a lone surrogate" in records[2]["error"]
    assert "bad\\udcff" in (tmp_path / "report.md").read_text(encoding="utf-8")
