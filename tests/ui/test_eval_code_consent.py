"""An evaluation whose config runs code asks first, naming its files and inline checks: declined, nothing runs;
agreed, its javascript and python checks run (echo cells: no model)."""

import yaml
from PySide6.QtWidgets import QMessageBox

from tests.ui.conftest import wait_until

CONFIG = {"prompts": ["Say {{word}}"], "providers": ["echo"],
          "tests": [{"vars": {"word": "dog"}, "assert": [{"type": "javascript", "value": "output.endsWith('dog')"},
                                                         {"type": "python", "value": "file://check.py"}]}]}


def test_code_runs_only_after_the_user_agreed(window, loop, tmp_path, monkeypatch):
    (tmp_path / "check.py").write_text("def get_assert(output, context):\n    return 'dog' in output\n",
                                       encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    asked = []

    def answer(reply):
        def question(_parent, title, text, *_args):
            asked.append(text)
            return reply
        return question

    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.No))
    assert window.evals.open_config(path), window.messages
    evaluation = window.session.evaluation
    assert len(asked) == 1 and str(tmp_path / "check.py") in asked[0]
    assert "javascript assertion (inline): output.endsWith('dog')" in asked[0]
    assert not window.evals.running and all(cell.status == "pending" for cell in evaluation.cells)

    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.Yes))
    window.evals.run()
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=60)
    (cell,) = evaluation.cells
    assert cell.status == "pass", (cell.error, cell.grading)
    window.evals.run_again()  # the same evaluation: not asked again
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=60)
    assert len(asked) == 2 and evaluation.cells[0].status == "pass"


def test_a_cell_whose_vars_need_code_opens_as_a_pane_only_after_it_ran(window, tmp_path):
    (tmp_path / "check.py").write_text("def get_assert(output, context):\n    return True\n", encoding="utf-8")
    config = {**CONFIG, "defaultTest": {"options": {"transformVars": "({word: vars.word.toUpperCase()})"}}}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert window.evals.open_config(path, run=False), window.messages
    (cell,) = window.session.evaluation.cells
    assert window.evals.open_cell(cell) is None  # a message, not an exception out of the window's handler
    assert "transformVars runs code" in window.messages[-1]


def test_the_window_asks_before_an_exec_prompt_or_a_template_filter_runs(window, loop, tmp_path, monkeypatch):
    import stat

    marker = tmp_path / "ran"
    script = tmp_path / "make.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho 'say {{{{ word | up }}}}'\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "up.js").write_text("module.exports = s => s.toUpperCase();", encoding="utf-8")
    config = {"prompts": ["exec:./make.sh"], "providers": ["echo"], "nunjucksFilters": {"up": "up.js"},
              "tests": [{"vars": {"word": "dog"}}]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    asked, replies = [], [QMessageBox.No, QMessageBox.Yes]
    monkeypatch.setattr(QMessageBox, "question", lambda _p, _t, text, *_a: asked.append(text) or replies.pop(0))
    assert window.evals.open_config(path), window.messages
    evaluation = window.session.evaluation
    assert f"the command {script}" in asked[0] and f"nunjucks filter up: the file {tmp_path / 'up.js'}" in asked[0]
    assert not marker.exists() and all(cell.status == "pending" for cell in evaluation.cells)
    window.evals.run()
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=60)
    assert marker.exists() and evaluation.cells[0].output == "say DOG"
