"""The evaluation view says when its judge cannot be trusted: with the embedded SmolLM2-135M as judge (the real
model) every judged column gives its calibration score and "verdicts unreliable", its verdicts are marked in the
matrix and left out of the pass rate; every assertion's result shows in the cell. Picking another judge (a
capable one: tests/fixtures/judge_standin.py, a real HTTP server standing in for a judge model that cannot run
on this machine) is remembered and judges the cells again, and then nothing says unreliable."""

import os
import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.ui.evaluate.cell import BADGES
from app.ui.evaluate.matrix import CHECKS_ROLE, STATE_ROLE, UNRELIABLE_ROLE
from app.ui.settings import EVAL_JUDGE
from tests.fixtures.judge_standin import RuleJudge
from tests.ui.conftest import wait_until
from tests.ui.test_eval_view import finished, header, write_config

CONFIG = {
    "description": "capitals", "prompts": ["Answer the question {{q}}"], "providers": ["echo"],
    "tests": [
        {"vars": {"q": "capital of France"}, "providerOutput": "The capital of France is Paris.",
         "assert": [{"type": "icontains", "value": "paris"},
                    {"type": "llm-rubric", "value": "It names Paris as the capital of France"}]},
        {"vars": {"q": "capital of Italy"}, "providerOutput": "The capital of Italy is Rome.",
         "assert": [{"type": "llm-rubric", "value": "It names Rome as the capital of Italy"}]},
    ],
}


@pytest.fixture
def rule_judge():
    server = RuleJudge()
    yield server
    server.close()


def test_the_embedded_judge_is_marked_unreliable_and_another_judge_can_be_picked(loaded_window, loop, tmp_path,
                                                                                settings, rule_judge):
    window = loaded_window
    view = window.evals.view
    assert window.evals.open_config(write_config(tmp_path, CONFIG))
    wait_until(loop, lambda: finished(window), timeout=300)
    view.model.flush()
    text = header(window, 0)
    found = re.search(r"judge: SmolLM2-135M-Instruct\.Q4_1, (\d+)/10 on llm-rubric calibration — verdicts unreliable",
                      text)
    assert found and int(found.group(1)) < 8, text
    assert "0/2 pass" in text and "2 unreliable" in text
    assert "2 unreliable" in view.summary.text() and "pass rate 0%" in view.summary.text()
    assert view.judge_button.text() == "Judge: main model (SmolLM2-135M-Instruct.Q4_1)"
    index = view.model.index(0, 1)
    assert [c.format for c in index.data(UNRELIABLE_ROLE)] == ["llm-rubric"]
    assert [(kind, doubtful) for kind, _passed, doubtful in index.data(CHECKS_ROLE)] == [
        ("icontains", False), ("llm-rubric", True)]  # every assertion, the deterministic one too
    assert "Not counted: judge: SmolLM2-135M-Instruct.Q4_1" in index.data(Qt.ToolTipRole)
    # the verdicts read neither PASS nor FAIL (a correct answer showed a red FAIL), as the summary counts them
    assert [view.model.index(row, 1).data(STATE_ROLE) for row in range(2)] == ["unreliable", "unreliable"]
    assert BADGES[index.data(STATE_ROLE)][0] == "UNRELIABLE JUDGE"
    assert index.data(Qt.ToolTipRole).startswith("UNRELIABLE (its judge said ")
    assert index.data(Qt.AccessibleTextRole).startswith("unreliable (its judge said ")
    if os.environ.get("CHORUS_SHOTS"):  # a screenshot to look at (under Xvfb), e.g. for docs/
        window.grab().save(str(Path(os.environ["CHORUS_SHOTS"]) / "eval-unreliable.png"))

    view.judge_button.menu().aboutToShow.emit()  # what opening the Judge menu offers
    offered = [action.text() for action in view.judge_button.menu().actions() if action.text()]
    assert offered[0].startswith("Main model (") and offered[-2:] == ["A GGUF file…", "An OpenAI-compatible server…"]
    assert window.evals.set_judge(rule_judge.url)
    assert settings.get(EVAL_JUDGE) == rule_judge.url  # remembered for the next evaluation
    wait_until(loop, lambda: finished(window) and window.session.evaluation.calibrations[-1].done, timeout=120)
    view.model.flush()
    text = header(window, 0)
    assert "judge: rule-judge, 10/10 on llm-rubric calibration" in text and "unreliable" not in text, text
    assert "2/2 pass" in text and "unreliable" not in view.summary.text()
    assert view.judge_button.text() == f"Judge: {rule_judge.url} (rule-judge)"
    assert index.data(UNRELIABLE_ROLE) == []
    assert index.data(STATE_ROLE) == "pass"
    assert [c.output for c in window.session.evaluation.cells] == ["The capital of France is Paris.",
                                                                   "The capital of Italy is Rome."]
