"""`python -m app eval` on the real model with inputs people hand it: a lone surrogate in the text that reaches
the model and every output file, and a promptfoo config with a written apiKey run with --model."""

import csv
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def chorus_eval(*args):
    return subprocess.run([sys.executable, "-m", "app", "eval", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "COLUMNS": "200"})


def test_lone_surrogates_reach_the_model_and_every_output_is_written(model_path, tmp_path):
    config = {"description": "surrogates \udcff",
              "prompts": [{"raw": "Repeat: {{word}} \udcff", "label": "repeat \udcff"}],
              "providers": [{"id": f"file://{model_path}", "label": "small \udcff",
                             "config": {"temperature": 0, "max_tokens": 8}}],
              "tests": [{"description": "case \udcff", "vars": {"word": "sea\udcff"},
                         "assert": [{"type": "not-contains", "value": "\udcff never"}]},
                        {"vars": {"word": "sky"}, "assert": [{"type": "contains", "value": "\udcff"}]}]}
    path = tmp_path / "promptfooconfig.json"
    path.write_text(json.dumps(config), encoding="utf-8")  # valid JSON: the surrogates are \udcff escapes
    outputs = [tmp_path / f"results.{ext}" for ext in ("json", "jsonl", "yaml", "csv", "html", "xml")]
    run = chorus_eval(path, *(arg for p in outputs for arg in ("-o", p)))
    assert run.returncode in (0, 100), run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "[small \ufffd] repeat \ufffd" in run.stdout
    cells = json.loads(outputs[0].read_text(encoding="utf-8"))["results"]["results"]
    assert len(cells) == 2 and all(c["response"]["tokenUsage"]["completion"] > 0 for c in cells), cells
    assert cells[0]["vars"] == {"word": "sea\udcff"} and cells[0]["prompt"]["label"] == "repeat \udcff"
    assert [c["success"] for c in cells] == [True, False]  # the model's reply is text: it never holds \udcff
    assert len(outputs[1].read_text(encoding="utf-8").splitlines()) == 2
    assert yaml.safe_load(outputs[2].read_text(encoding="utf-8"))["config"]["description"] == "surrogates \udcff"
    assert len(list(csv.reader(outputs[3].open(encoding="utf-8")))) == 3
    assert "case \ufffd" in outputs[4].read_text(encoding="utf-8")
    assert len(ET.parse(outputs[5]).getroot().findall(".//testcase")) == 2


def test_a_promptfoo_config_with_an_api_key_runs_with_model_and_writes_it_nowhere(model_path, tmp_path):
    key = "sk-live-" + "Q7x" * 10
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump({
        "prompts": ["Say hi to {{name}}"],
        "providers": [{"id": "openai:chat:gpt-4o-mini", "config": {"apiKey": key, "temperature": 0,
                                                                   "max_tokens": 4}}],
        "tests": [{"vars": {"name": "Ann"}}]}), encoding="utf-8")
    run = chorus_eval(tmp_path / "promptfooconfig.yaml", "--model", model_path, "-o", tmp_path / "r.json")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stderr.count("an API key is written in the config for api.openai.com") == 1
    written = (tmp_path / "r.json").read_text(encoding="utf-8")
    assert key not in written and key not in run.stderr + run.stdout and "apiKey" not in written


CTRL_C_IN_A_FINALIZER = """
import os, signal, sys, weakref
from app.__main__ import main
from app.cli import eval as eval_cli

class Doomed:
    pass

load = eval_cli.load_config

def load_config(*args, **kwargs):
    suite = load(*args, **kwargs)
    doomed = Doomed()  # Ctrl+C while the evaluation is being set up, from inside a finalizer
    weakref.finalize(doomed, os.kill, os.getpid(), signal.SIGINT)
    del doomed
    return suite

eval_cli.load_config = load_config
sys.exit(main(["eval", *sys.argv[1:]]))
"""


def test_ctrl_c_landing_inside_a_finalizer_while_eval_sets_up_exits_130_running_nothing(model_path, tmp_path):
    # a KeyboardInterrupt raised inside the finalizer was swallowed and the whole evaluation ran (exit 0); the
    # counting handler, installed before anything is read, is seen once the backends are open
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump({
        "prompts": ["Say hi to {{name}}"], "providers": [{"id": f"file://{model_path}", "config": {"max_tokens": 4}}],
        "tests": [{"vars": {"name": "Ann"}}]}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_A_FINALIZER, str(tmp_path / "promptfooconfig.yaml"),
                           "-o", str(tmp_path / "r.json")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert not (tmp_path / "r.json").exists() and "KeyboardInterrupt" not in done.stderr
