"""Code checks are graded on worker threads: a check that takes its time holds up neither the thread that owns
the run nor the other cells (echo cells: no model)."""

import yaml

from app.evaluate import load_config
from app.evaluate.code_checks import CodeRunner
from app.evaluate.runner import EvaluationRunner
from app.session import SessionRunner

WAITS = "import os, time\nwhile not os.path.exists(context['vars']['flag']):\n    time.sleep(0.01)\nreturn True"


def test_a_slow_code_check_does_not_hold_up_the_run(tmp_path):
    flag = tmp_path / "go"
    config = {"prompts": ["say {{word}}"], "providers": ["echo"],
              "tests": [{"vars": {"word": "slow", "flag": str(flag)}, "assert": [{"type": "python", "value": WAITS}]},
                        {"vars": {"word": "plain"}, "assert": [{"type": "contains", "value": "plain"}]}]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    suite = load_config(path)
    evaluation = suite.evaluation()
    code = CodeRunner(tmp_path)
    try:
        runner = EvaluationRunner(evaluation, SessionRunner(None), lambda target: "none", tmp_path, code=code)
        runner.start()  # returns while the slow check runs on its worker thread
        slow, plain = evaluation.cells
        assert plain.status == "pass" and slow.status == "grading" and not runner.done
        flag.touch()
        assert runner.drive(timeout=60)
        assert slow.status == "pass", (slow.error, slow.grading)
    finally:
        code.close()
